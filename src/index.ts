/** The core entry (browser, Web Worker and Node): re-exports only; imports no Node module. Node adds src/node.ts. */
export { createDevice, describeAdapter, NoAdapterError, type TesseraDevice, type CreateDeviceOptions } from './gpu/device.ts';
export { defaultRegistry, setKernelFileReader } from './registry/bundled.ts';
export { parseRegistry, parseRegistryText } from './registry/parse.ts';
export { setHost, type Host } from './host.ts';
export { bytesFile, type ModelFile, type ModelFolder, type ModelFiles, type SingleModelFile } from './formats/files.ts';
export { cachedFolder, memoryCache, opfsCache, CACHE_CHUNK_BYTES, type FileCache, type CacheProgress } from './formats/cache.ts';
export { urlFolder, urlFile, urlFileOfSize, blobFile, blobModelFile, blobFolder, HttpError, RangeUnsupportedError, type UrlOptions } from './formats/web-files.ts';
export {
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
export { loadModel, openModel, requireTokenizer, type LoadedModel, type LoadModelOptions } from './models/load.ts';
export { ModelConfigError, UnsupportedArchitectureError, MissingTensorError, LayerCountError, MissingTokenizerError, TokenIdError } from './models/errors.ts';
export { checkTokenIds, parseTokenIds } from './models/token-ids.ts';
export { SUPPORTED_ARCHITECTURES, decoderConfigFromHF, type DecoderConfig } from './models/config.ts';
export { QUANT_MODES, type QuantMode } from './models/weights.ts';
export { generate, generateTokens, ContextLengthError, NonFiniteLogitsError, type GenerationResult, type TokenEvent } from './runtime/generate.ts';
export { decodeTokens, type DecodeLoopOptions, type DecodedToken } from './runtime/decode-loop.ts';
export { Program, ProgramError, type ProgramStats } from './program/program.ts';
export { StepBuilder, dyn, type OpSink, type StepTensor } from './program/step.ts';
export { computeLogits } from './runtime/logits.ts';
export type { GenerationOptions } from './runtime/options.ts';
export { loadTokenizer, type TextTokenizer } from './tokenizer/index.ts';
export { Encoder, loadEncoder, encoderConfigFromHF, isEncoderConfig, type EncoderConfig } from './models/encoder.ts';
export { embed, rerank, loadEmbeddingModel, pool, POOLINGS, type EmbeddingModel, type EmbedOptions, type Pooling, type RerankResult } from './runtime/embed.ts';
export { TesseraClient, RemoteModel, WorkerError, ModelKindError, sourceSpec, folderSpec, type ClientLoadOptions, type ClientGenerateOptions, type TokenStream, type ModelSourceInput } from './web/client.ts';
export { serveEngine, modelFilesOf } from './web/host.ts';
export type { ModelSourceSpec, LoadProgressEvent, DeviceInfo, ModelInfo, WireResult } from './web/protocol.ts';
