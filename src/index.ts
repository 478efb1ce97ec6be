/** The package entry: re-exports only. */
export { createDevice, describeAdapter, NoAdapterError, type TesseraDevice, type CreateDeviceOptions } from './gpu/device.ts';
export { loadRegistry, defaultRegistry } from './registry/load.ts';
export {
  loadContract,
  validateContract,
  resolveContract,
  templateContext,
  ContractError,
  ContractInputError,
  ContractPlanError,
  ContractSchemaError,
  type KernelContract,
  type Plan,
  type ResolveOptions,
} from './contracts/index.ts';
export {
  runContract,
  recordContract,
  prepareContract,
  planFor,
  renderPassShader,
  ShaderTemplateError,
  type HostTensor,
  type GpuTensorRef,
  type RunContractOptions,
  type RunContractResult,
} from './contracts/run.ts';
export { loadModel, type LoadedModel, type LoadModelOptions } from './models/load.ts';
export { SUPPORTED_ARCHITECTURES, decoderConfigFromHF, type DecoderConfig } from './models/config.ts';
export { QUANT_MODES, type QuantMode } from './models/weights.ts';
export { generate, generateTokens, type GenerationResult, type TokenEvent } from './runtime/generate.ts';
export { computeLogits } from './runtime/logits.ts';
export type { GenerationOptions } from './runtime/options.ts';
export { loadTokenizer, type TextTokenizer } from './tokenizer/index.ts';
