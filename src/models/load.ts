/** loadModel: a model source opened, validated and resident on the GPU, with its tokenizer (when it has one) and decoder. */
import type { TesseraDevice } from '../gpu/device.ts';
import type { TextTokenizer } from '../tokenizer/index.ts';
import type { DecoderConfig } from './config.ts';
import { Decoder } from './decoder.ts';
import { MissingTokenizerError } from './errors.ts';
import type { ModelFiles } from '../formats/files.ts';
import { openModelSource, type ModelSource } from './source.ts';
import { checkWeights, uploadWeights, type GpuWeights, type LoadProgress, type QuantMode } from './weights.ts';

export interface LoadedModel {
  path: string;
  config: DecoderConfig;
  /** null for a model without a tokenizer (token ids in and out; EOS from the config). */
  tokenizer: TextTokenizer | null;
  /** The tokenizer's file; when `tokenizer` is null, the file that is missing. */
  tokenizerFile: string;
  weights: GpuWeights;
  decoder: Decoder;
  device: TesseraDevice;
  destroy(): void;
}

export interface LoadModelOptions {
  quant?: QuantMode;
  /** Longest context the KV cache and RoPE tables are built for (default: min(4096, max_position_embeddings)). */
  maxPositions?: number;
  onProgress?: (p: LoadProgress) => void;
}

/** Open and check a model without touching the GPU: config, tokenizer, every tensor's presence and shape. */
export async function openModel(path: string | ModelFiles): Promise<ModelSource> {
  const src = await openModelSource(path);
  checkWeights(src);
  return src;
}

/** The model's tokenizer, or a MissingTokenizerError naming the missing file and what needed it. */
export function requireTokenizer(model: Pick<LoadedModel, 'tokenizer' | 'tokenizerFile'>, what: string): TextTokenizer {
  if (!model.tokenizer) throw new MissingTokenizerError(model.tokenizerFile, what);
  return model.tokenizer;
}

export async function loadModelFromSource(device: TesseraDevice, src: ModelSource, opts: LoadModelOptions = {}): Promise<LoadedModel> {
  const weights = await uploadWeights(device, src, { quant: opts.quant, onProgress: opts.onProgress });
  let decoder: Decoder;
  try {
    decoder = new Decoder(device, src.config, weights, { maxPositions: opts.maxPositions, ropeInterleaved: src.ropeInterleaved });
  } catch (e) {
    weights.destroy();
    throw e;
  }
  return {
    path: src.path,
    config: src.config,
    tokenizer: src.tokenizer,
    tokenizerFile: src.tokenizerFile,
    weights,
    decoder,
    device,
    destroy: () => {
      decoder.destroy(); // sessions (KV caches, compiled programs) and RoPE tables
      weights.destroy();
    },
  };
}

/** Load a model (an HF folder or a .gguf file, as ModelFiles or in Node a path) onto the device. */
export async function loadModel(device: TesseraDevice, path: string | ModelFiles, opts: LoadModelOptions = {}): Promise<LoadedModel> {
  return loadModelFromSource(device, await openModelSource(path), opts);
}
