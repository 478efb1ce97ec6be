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
