/**
 * Random but well-formed decoder weights for benchmarks and tests (nothing downloaded): Q4_K blocks of zero-mean
 * sub-blocks, f16/f32 values in [-0.05, 0.05], norm weights of 1 (or random in [0.5, 1.5] with `randomNorms`); MoE
 * experts stacked as the moe contract reads them (MXFP4 for MXFP4 gpt-oss configs, Q4_K with q4k). The same seed gives
 * the same weights.
 */
import { f32ToF16Bytes } from '../formats/index.ts';
import { uploadBuffer } from '../gpu/buffers.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import type { Tensor } from '../ops/runner.ts';
import type { DecoderConfig } from './config.ts';
import { Decoder } from './decoder.ts';
import type { LoadedModel } from './load.ts';
import { isExpertMatrix } from './moe-weights.ts';
import { weightSpecs, type GpuWeights } from './weights.ts';

export interface RandomWeightOptions {
  seed?: number;
  randomNorms?: boolean;
  /** Store the embedding table as f32 even when the linears are q4k / f16 (devices without shader-f16). */
  f32Embedding?: boolean;
  /**
   * q4k_m: which layers keep v_proj and down_proj in Q6_K: llama.cpp's share ('mix', the default), every layer ('all')
   * or none ('none'); the LM head is Q6_K in each (diagnostics: a step of one kind of layer against the mix).
   */
  q6kLayers?: 'mix' | 'all' | 'none';
}

/** `length` bytes hashed from their index and `salt` (the quantized blocks' payload, headers written over it). */
function hashBytes(length: number, salt: number): Uint8Array {
  const data = new Uint8Array(length);
  for (let i = 0; i < data.length; i++) data[i] = (Math.imul(i ^ salt, 2654435761) >>> 13) & 0xff;
  return data;
}

/**
 * Q4_K blocks for n weights: d * sc * q - dmin * m with m == sc and dmin = 7.5 d, so each sub-block is centred on zero
 * (|w| <= 63 * 7.5 d, spread ~0.03 like the f16 weights) and activations stay in f16 range through deep stacks of
 * random layers.
 */
function randomQ4K(n: number, salt: number): Uint8Array {
  const data = hashBytes((n / 256) * 144, salt);
  const hdr = f32ToF16Bytes([0.0002, 0.0015]);
  for (let b = 0; b < data.length; b += 144) {
    data.set(hdr, b);
    data.copyWithin(b + 8, b + 4, b + 8); // the mins of sub-blocks 0..3 (and high bits of 4..7) equal the scales
    for (let j = 12; j < 16; j++) data[b + j] = (data[b + j]! & 0x0f) * 0x11; // sub-blocks 4..7: min nibble = scale nibble
  }
  return data;
}

/**
 * Q8_0 blocks for n weights: 32 int8 of any value each and one of 16 f16 scales in [2e-4, 3.1e-4] (from the block's
 * first hashed byte), so |w| <= 0.039 like the others and a kernel that takes another block's scale gives other values.
 */
const Q80_SCALES = f32ToF16Bytes(Array.from({ length: 16 }, (_, i) => 0.0002 + i * 0.0000075));
function randomQ80(n: number, salt: number): Uint8Array {
  const data = hashBytes((n / 32) * 34, salt);
  for (let b = 0; b < data.length; b += 34) {
    const i = 2 * (data[b]! & 15);
    data.set(Q80_SCALES.subarray(i, i + 2), b);
  }
  return data;
}

/**
 * Q6_K blocks for n weights: 6-bit codes of any value (centred on 32), int8 sub-block scales 1..16 and d = 7.5e-5, so
 * |w| <= 0.04 like the others.
 */
function randomQ6K(n: number, salt: number): Uint8Array {
  const data = hashBytes((n / 256) * 210, salt);
  const d = f32ToF16Bytes([0.000075]);
  for (let b = 0; b < data.length; b += 210) {
    for (let j = 192; j < 208; j++) data[b + j] = (data[b + j]! & 15) + 1;
    data.set(d, b + 208);
  }
  return data;
}

/**
 * llama.cpp's Q4_K_M recipe: which linears it keeps in Q6_K (the LM head; v_proj and down_proj of the first and last
 * eighth of the layers and every third one between), the rest Q4_K.
 */
export function q4kmKeepsQ6K(name: string, numLayers: number, layers: 'mix' | 'all' | 'none' = 'mix'): boolean {
  if (name === 'lm_head.weight') return true;
  const m = /^model\.layers\.(\d+)\.(self_attn\.v_proj|mlp\.down_proj)\.weight$/.exec(name);
  if (!m || layers === 'none') return false;
  if (layers === 'all') return true;
  const l = Number(m[1]);
  const e = Math.floor(numLayers / 8);
  return l < e || l >= numLayers - e || (l - e) % 3 === 2;
}

/** Weight formats of random decoders: q4k_m mixes Q4_K and Q6_K linears as llama.cpp's Q4_K_M files do. */
export const RANDOM_QUANTS = ['q4k', 'q4k_m', 'q8_0', 'f16', 'f32'] as const;
export type RandomQuant = (typeof RANDOM_QUANTS)[number];

/** MXFP4 blocks and e8m0 scales for n weights: codes uniform over the 16 values, scales 2^-8 .. 2^-6 (|w| <= 0.09). */
function randomMxfp4(n: number, salt: number): { blocks: Uint8Array; scales: Uint8Array } {
  const blocks = new Uint8Array(n / 2);
  for (let i = 0; i < blocks.length; i++) blocks[i] = (Math.imul(i ^ salt, 2654435761) >>> 11) & 0xff;
  const scales = new Uint8Array(n / 32);
  for (let i = 0; i < scales.length; i++) scales[i] = 119 + ((Math.imul(i ^ salt, 2246822519) >>> 29) % 3);
  return { blocks, scales };
}

/** Tensors (name endings) whose values differ from those of the tensor they are fused with at load. */
const PARTNER_ROLES = ['.mlp.up_proj.weight', '.self_attn.v_proj.weight'];

/** `out` filled with `pool` repeated, starting at pool element `start`. */
function fillFromPool<T extends Uint8Array | Float32Array>(out: T, pool: T, start: number): void {
  let o = 0;
  for (let from = start; o < out.length; from = 0) {
    const take = Math.min(pool.length - from, out.length - o);
    out.set(pool.subarray(from, from + take), o);
    o += take;
  }
}

export function randomWeights(dev: TesseraDevice, cfg: DecoderConfig, quant: RandomQuant, opts: RandomWeightOptions = {}): GpuWeights {
  const tensors = new Map<string, Tensor>();
  const storage: Record<string, number> = {};
  let bytes = 0;
  let seed = opts.seed ?? 12345;
  const next = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0);
  const rnd = () => (next() / 2 ** 32 - 0.5) * 0.1;
  const pool = new Float32Array(1 << 16).map(rnd);
  const f16Pool = f32ToF16Bytes(pool);
  const baseSalt = next();
  for (const s of weightSpecs(cfg)) {
    if (s.optional || (cfg.moe && isExpertMatrix(s.name))) continue;
    const n = s.shape.reduce((a, d) => a * d, 1);
    // up_proj and v_proj take values of their own (another salt, another start in the float pool): with the values
    // of gate_proj and k_proj, the halves of a fused gate|up (or the k and v of q|k|v) would be equal, and a decoder
    // that swapped them would give the same logits
    const own = PARTNER_ROLES.findIndex((r) => s.name.endsWith(r)) + 1;
    const salt = own ? baseSalt ^ Math.imul(own, 0x9e3779b1) : baseSalt;
    const start = own ? (own * 40503) % pool.length : 0;
    const K = s.shape[s.shape.length - 1]!;
    let data: Uint8Array;
    let dtype: string;
    if (s.kind === 'norm') {
      data = new Uint8Array(new Float32Array(n).map(() => (opts.randomNorms ? 0.5 + next() / 2 ** 32 : 1)).buffer);
      dtype = 'float32';
    } else if (s.kind === 'linear' && quant === 'q4k_m' && K % 256 === 0 && q4kmKeepsQ6K(s.name, cfg.numLayers, opts.q6kLayers)) {
      data = randomQ6K(n, salt);
      dtype = 'q6_k';
    } else if (s.kind === 'linear' && (quant === 'q4k' || quant === 'q4k_m') && K % 256 === 0) {
      data = randomQ4K(n, salt);
      dtype = 'q4_k';
    } else if (s.kind === 'linear' && quant === 'q8_0' && K % 32 === 0) {
      data = randomQ80(n, salt);
      dtype = 'q8_0';
    } else if ((s.kind === 'linear' || (s.kind === 'embedding' && !opts.f32Embedding)) && quant !== 'f32') {
      data = new Uint8Array(n * 2);
      fillFromPool(data, f16Pool, 2 * start);
      dtype = 'float16';
    } else {
      const f = new Float32Array(n);
      fillFromPool(f, pool, start);
      data = new Uint8Array(f.buffer);
      dtype = 'float32';
    }
    const buffer = uploadBuffer(dev.device, data, s.name);
    tensors.set(s.name, { buffer, dtype, shape: s.shape });
    if (s.kind === 'linear') storage[dtype] = (storage[dtype] ?? 0) + 1;
    bytes += buffer.size;
  }
  // MoE experts in the moe contract's layout (moe-weights.ts): MXFP4 for gpt-oss configs with MXFP4 experts, Q4_K for
  // q4k where the rows fit 256-blocks, else f32
  const m = cfg.moe;
  for (let l = 0; m && l < cfg.numLayers; l++) {
    if (!m.sparse[l]) continue;
    const x = `model.layers.${l}.mlp.experts.`;
    const E = m.numExperts;
    const I = m.expertIntermediateSize;
    const H = cfg.hiddenSize;
    for (const [name, rows, K] of [['w_up', 2 * I, H], ['w_down', H, I]] as const) {
      const n = E * rows * K;
      const put = (tname: string, data: Uint8Array, dtype: string, shape: number[]) => {
        const buffer = uploadBuffer(dev.device, data, x + tname);
        tensors.set(x + tname, { buffer, dtype, shape });
        bytes += buffer.size;
      };
      let kind: string;
      if (m.expertFormat === 'mxfp4' && K % 32 === 0) {
        const q = randomMxfp4(n, baseSalt ^ l);
        put(name, q.blocks, 'uint8', [E, rows, K / 32, 16]);
        put(name + '_scales', q.scales, 'uint8', [E, rows, K / 32]);
        kind = 'mxfp4';
      } else if ((quant === 'q4k' || quant === 'q4k_m') && K % 256 === 0) {
        put(name, randomQ4K(n, baseSalt ^ l), 'q4_k', [E, rows, K]);
        kind = 'q4_k';
      } else {
        const f = new Float32Array(n);
        fillFromPool(f, pool, 0);
        put(name, new Uint8Array(f.buffer), 'float32', [E, rows, K]);
        kind = 'float32';
      }
      storage[`experts ${kind}`] = (storage[`experts ${kind}`] ?? 0) + 1;
    }
  }
  return {
    mode: quant === 'q4k_m' ? 'file' : quant, // a Q4_K_M mix is what a GGUF file keeps as stored
    tensors,
    storage,
    bytes,
    notes: [],
    get: (name) => tensors.get(name)!,
    destroy: () => tensors.forEach((t) => t.buffer.destroy()),
  };
}

/**
 * A model of random weights with these shapes (no tokenizer: token ids in and out), for benchmarks and tests that
 * need a LoadedModel without a checkpoint.
 */
export function randomModel(
  dev: TesseraDevice,
  cfg: DecoderConfig,
  quant: RandomQuant,
  opts: RandomWeightOptions & { decoder?: ConstructorParameters<typeof Decoder>[3]; label?: string } = {},
): LoadedModel {
  const weights = randomWeights(dev, cfg, quant, opts);
  const decoder = new Decoder(dev, cfg, weights, opts.decoder);
  return {
    path: opts.label ?? `random ${quant} weights`,
    config: cfg,
    tokenizer: null,
    tokenizerFile: '(none: random weights)',
    weights,
    decoder,
    device: dev,
    destroy: () => {
      decoder.destroy();
      weights.destroy();
    },
  };
}
