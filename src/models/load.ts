/** loadModel: a model source opened, validated and resident on the GPU, with its tokenizer and decoder. */
import type { TesseraDevice } from '../gpu/device.ts';
import type { TextTokenizer } from '../tokenizer/index.ts';
import type { DecoderConfig } from './config.ts';
import { Decoder } from './decoder.ts';
import { openModelSource } from './source.ts';
import { uploadWeights, type GpuWeights, type LoadProgress, type QuantMode } from './weights.ts';

export interface LoadedModel {
  path: string;
  config: DecoderConfig;
  tokenizer: TextTokenizer;
  weights: GpuWeights;
  decoder: Decoder;
  device: TesseraDevice;
  /** Generation defaults from generation_config.json (when present). */
  destroy(): void;
}

export interface LoadModelOptions {
  quant?: QuantMode;
  /** Longest context the KV cache and RoPE tables are built for (default: min(4096, max_position_embeddings)). */
  maxPositions?: number;
  onProgress?: (p: LoadProgress) => void;
}

export async function loadModel(device: TesseraDevice, path: string, opts: LoadModelOptions = {}): Promise<LoadedModel> {
  const src = await openModelSource(path);
  const weights = await uploadWeights(device, src, { quant: opts.quant, onProgress: opts.onProgress });
  const decoder = new Decoder(device, src.config, weights, { maxPositions: opts.maxPositions, ropeInterleaved: src.ropeInterleaved });
  return {
    path,
    config: src.config,
    tokenizer: src.tokenizer,
    weights,
    decoder,
    device,
    destroy: () => weights.destroy(),
  };
}
