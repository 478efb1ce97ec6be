/**
 * Weights on the GPU. Every tensor the decoder needs is checked against the config's shapes (errors name the file,
 * tensor and shapes), converted per the quantization mode, and uploaded once. Nothing is half-loaded: on any error
 * the buffers uploaded so far are destroyed.
 */
import { f32ToF16Bytes, GgmlType, quantizeQ4_K, quantizeQ8_0 } from '../formats/index.ts';
import { uploadBuffer } from '../gpu/buffers.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import { opAccepts, type Tensor } from '../ops/runner.ts';
import type { DecoderConfig } from './config.ts';
import { LayerCountError, MissingTensorError, ModelConfigError } from './errors.ts';
import { gpuExpertTensors, isExpertMatrix } from './moe-weights.ts';
import type { ModelSource } from './source.ts';

export type QuantMode = 'auto' | 'f32' | 'f16' | 'q4k' | 'q8_0';
export const QUANT_MODES: readonly QuantMode[] = ['auto', 'f32', 'f16', 'q4k', 'q8_0'];

export interface WeightSpec {
  name: string;
  shape: number[];
  /**
   * 'router': a MoE router's weight (kept f32); 'experts': stacked expert matrices [E, ...] (floats); 'mxfp4': their
   * MXFP4 *_blocks / *_scales (uint8).
   */
  kind: 'linear' | 'embedding' | 'norm' | 'bias' | 'router' | 'experts' | 'mxfp4';
  optional?: boolean;
}

/**
 * The MoE feed-forward tensors of layer l (prefix `model.layers.l.`), by family and storage:
 * - gpt-oss: router (weight + bias), experts as transformers' parameters (gate_up_proj [E, H, 2I] with gate/up in
 *   interleaved columns, down_proj [E, I, H], biases), or in the released MXFP4 form (`*_blocks` [E, rows, K/32, 16]
 *   + `*_scales` [E, rows, K/32], rows = output features, blocks along the input).
 * - Qwen3-MoE: router `mlp.gate.weight` [E, H]; experts per expert (`mlp.experts.e.{gate,up,down}_proj.weight`, as
 *   released and as transformers saves them), or stacked (`mlp.experts.gate_up_proj` [E, 2I, H], gate rows first,
 *   `mlp.experts.down_proj` [E, H, I]) when the source holds that form (`has`).
 * - GGUF (both): llama.cpp's `ffn_{gate,up,down}_exps` as `mlp.experts.{gate,up,down}_exps` [E, rows, in] (+ biases).
 */
function moeSpecs(cfg: DecoderConfig, p: string, has: (name: string) => boolean): WeightSpec[] {
  const m = cfg.moe!;
  const H = cfg.hiddenSize;
  const E = m.numExperts;
  const I = m.expertIntermediateSize;
  if (has(p + 'mlp.experts.gate_exps')) {
    // GGUF (llama.cpp): gate, up and down stacked separately, rows = outputs (any ggml type, MXFP4 included)
    const x = p + 'mlp.experts.';
    const gpt = m.kind === 'gpt_oss';
    const out: WeightSpec[] = [
      { name: p + (gpt ? 'mlp.router.weight' : 'mlp.gate.weight'), shape: [E, H], kind: 'router' },
      { name: x + 'gate_exps', shape: [E, I, H], kind: 'experts' },
      { name: x + 'up_exps', shape: [E, I, H], kind: 'experts' },
      { name: x + 'down_exps', shape: [E, H, I], kind: 'experts' },
    ];
    if (gpt) {
      out.push(
        { name: p + 'mlp.router.bias', shape: [E], kind: 'bias' },
        { name: x + 'gate_exps_bias', shape: [E, I], kind: 'bias' },
        { name: x + 'up_exps_bias', shape: [E, I], kind: 'bias' },
        { name: x + 'down_exps_bias', shape: [E, H], kind: 'bias' },
      );
    }
    return out;
  }
  if (m.kind === 'gpt_oss') {
    const x = p + 'mlp.experts.';
    const out: WeightSpec[] = [
      { name: p + 'mlp.router.weight', shape: [E, H], kind: 'router' },
      { name: p + 'mlp.router.bias', shape: [E], kind: 'bias' },
      { name: x + 'gate_up_proj_bias', shape: [E, 2 * I], kind: 'bias' },
      { name: x + 'down_proj_bias', shape: [E, H], kind: 'bias' },
    ];
    if (m.expertFormat === 'mxfp4') {
      out.push(
        { name: x + 'gate_up_proj_blocks', shape: [E, 2 * I, H / 32, 16], kind: 'mxfp4' },
        { name: x + 'gate_up_proj_scales', shape: [E, 2 * I, H / 32], kind: 'mxfp4' },
        { name: x + 'down_proj_blocks', shape: [E, H, I / 32, 16], kind: 'mxfp4' },
        { name: x + 'down_proj_scales', shape: [E, H, I / 32], kind: 'mxfp4' },
      );
    } else {
      out.push({ name: x + 'gate_up_proj', shape: [E, H, 2 * I], kind: 'experts' }, { name: x + 'down_proj', shape: [E, I, H], kind: 'experts' });
    }
    return out;
  }
  const out: WeightSpec[] = [{ name: p + 'mlp.gate.weight', shape: [E, H], kind: 'router' }];
  if (has(p + 'mlp.experts.gate_up_proj')) {
    out.push({ name: p + 'mlp.experts.gate_up_proj', shape: [E, 2 * I, H], kind: 'experts' }, { name: p + 'mlp.experts.down_proj', shape: [E, H, I], kind: 'experts' });
    return out;
  }
  for (let e = 0; e < E; e++) {
    const x = `${p}mlp.experts.${e}.`;
    out.push(
      { name: x + 'gate_proj.weight', shape: [I, H], kind: 'linear' },
      { name: x + 'up_proj.weight', shape: [I, H], kind: 'linear' },
      { name: x + 'down_proj.weight', shape: [H, I], kind: 'linear' },
    );
  }
  return out;
}

/**
 * The tensors of a decoder, with the shapes its config implies. `has` (the source's tensor names) picks between
 * equivalent storage forms where a family has more than one (Qwen3-MoE per-expert or stacked experts).
 */
export function weightSpecs(cfg: DecoderConfig, has: (name: string) => boolean = () => false): WeightSpec[] {
  const H = cfg.hiddenSize;
  const D = cfg.headDim;
  const q = cfg.numHeads * D;
  const kv = cfg.numKvHeads * D;
  const I = cfg.intermediateSize;
  const out: WeightSpec[] = [{ name: 'model.embed_tokens.weight', shape: [cfg.vocabSize, H], kind: 'embedding' }];
  for (let l = 0; l < cfg.numLayers; l++) {
    const p = `model.layers.${l}.`;
    out.push(
      { name: p + 'input_layernorm.weight', shape: [H], kind: 'norm' },
      { name: p + 'self_attn.q_proj.weight', shape: [q, H], kind: 'linear' },
      { name: p + 'self_attn.k_proj.weight', shape: [kv, H], kind: 'linear' },
      { name: p + 'self_attn.v_proj.weight', shape: [kv, H], kind: 'linear' },
      { name: p + 'self_attn.o_proj.weight', shape: [H, q], kind: 'linear' },
      { name: p + 'post_attention_layernorm.weight', shape: [H], kind: 'norm' },
    );
    if (cfg.moe?.sparse[l]) out.push(...moeSpecs(cfg, p, has));
    else {
      out.push(
        { name: p + 'mlp.gate_proj.weight', shape: [I, H], kind: 'linear' },
        { name: p + 'mlp.up_proj.weight', shape: [I, H], kind: 'linear' },
        { name: p + 'mlp.down_proj.weight', shape: [H, I], kind: 'linear' },
      );
    }
    if (cfg.attentionBias) {
      out.push(
        { name: p + 'self_attn.q_proj.bias', shape: [q], kind: 'bias' },
        { name: p + 'self_attn.k_proj.bias', shape: [kv], kind: 'bias' },
        { name: p + 'self_attn.v_proj.bias', shape: [kv], kind: 'bias' },
      );
    }
    if (cfg.oProjBias) out.push({ name: p + 'self_attn.o_proj.bias', shape: [H], kind: 'bias' });
    if (cfg.attnSinks) out.push({ name: p + 'self_attn.sinks', shape: [cfg.numHeads], kind: 'bias' });
    if (cfg.qkNorm) {
      out.push({ name: p + 'self_attn.q_norm.weight', shape: [D], kind: 'norm' }, { name: p + 'self_attn.k_norm.weight', shape: [D], kind: 'norm' });
    }
    if (cfg.sandwichNorm) {
      out.push(
        { name: p + 'pre_feedforward_layernorm.weight', shape: [H], kind: 'norm' },
        { name: p + 'post_feedforward_layernorm.weight', shape: [H], kind: 'norm' },
      );
    }
  }
  out.push({ name: 'model.norm.weight', shape: [H], kind: 'norm' });
  out.push({ name: 'lm_head.weight', shape: [cfg.vocabSize, H], kind: 'linear', optional: cfg.tieWordEmbeddings });
  return out;
}

export interface LoadProgress {
  tensor: string;
  index: number;
  total: number;
  bytes: number;
}

export interface GpuWeights {
  /** The quantization mode in effect ('file': GGUF tensors kept as stored). */
  mode: Exclude<QuantMode, 'auto'> | 'file';
  tensors: Map<string, Tensor>;
  /** What each linear weight was stored as, e.g. { q4_k: 28, float32: 2 }. */
  storage: Record<string, number>;
  bytes: number;
  notes: string[];
  get(name: string): Tensor;
  destroy(): void;
}

/** Resolve `auto` against the source and the device. */
export function effectiveQuant(mode: QuantMode, src: ModelSource, dev: TesseraDevice): Exclude<QuantMode, 'auto'> | 'file' {
  const f16 = dev.caps.features.has('shader-f16');
  if (mode === 'f16' && !f16) {
    throw new ModelConfigError(src.path, '--quant f16', 'this device has no shader-f16; use --quant f32, q4k or q8_0');
  }
  if (mode !== 'auto') return mode;
  if (src.kind === 'gguf') return 'file';
  return f16 ? 'f16' : 'f32';
}

function shapeEq(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

const LAYER = /^model\.layers\.(\d+)\./;

/**
 * The layer count of the config against the layers present in the weights: extra layers in the file are an error
 * (naming the highest), and so is a missing layer (naming its first missing tensor).
 */
export function checkLayerCount(src: ModelSource, specs: readonly WeightSpec[] = weightSpecs(src.config, (n) => src.has(n))): void {
  const n = src.config.numLayers;
  const present = new Set<number>();
  for (const name of src.names()) {
    const m = LAYER.exec(name);
    if (m) present.add(Number(m[1]));
  }
  const extra = [...present].filter((l) => l >= n);
  if (extra.length) {
    const top = Math.max(...extra);
    throw new LayerCountError(
      src.configFile,
      src.layerCountField,
      `is ${n} but ${src.weightsFile} holds layers up to model.layers.${top} (${extra.length} layer${extra.length === 1 ? '' : 's'} beyond the config); set ${src.layerCountField} to match the weights`,
    );
  }
  for (let l = 0; l < n; l++) {
    if (present.has(l)) continue;
    const first = specs.find((s) => s.name.startsWith(`model.layers.${l}.`))!;
    throw new LayerCountError(
      src.configFile,
      src.layerCountField,
      `is ${n} but ${src.weightsFile} has no layer ${l} (first missing tensor: "${first.name}"; the file holds ${present.size} layer${present.size === 1 ? '' : 's'}); set ${src.layerCountField} to match the weights`,
    );
  }
}

/** Check every tensor the config implies (layer count, presence, shapes) before anything is uploaded; the specs to load. */
export function checkWeights(src: ModelSource): WeightSpec[] {
  const cfg = src.config;
  const m = cfg.moe;
  if (m?.expertFormat === 'mxfp4') {
    // blocks of 32 run along each expert matrix's input dimension
    for (const [field, k] of [['hidden_size', cfg.hiddenSize], ['intermediate_size', m.expertIntermediateSize]] as const) {
      if (k % 32 !== 0) throw new ModelConfigError(src.configFile, field, `${k} is not a multiple of 32, which MXFP4 experts (quantization_config.quant_method "mxfp4") need`);
    }
  }
  const all = weightSpecs(cfg, (n) => src.has(n));
  checkLayerCount(src, all);
  const specs = all.filter((s) => !s.optional || src.has(s.name));
  for (const s of specs) {
    if (!src.has(s.name)) throw new MissingTensorError(src.weightsFile, s.name, `is missing (expected shape [${s.shape.join(', ')}] for ${cfg.architecture})`);
    const got = src.info(s.name).shape;
    if (!shapeEq(got, s.shape)) {
      throw new ModelConfigError(src.weightsFile, s.name, `has shape [${got.join(', ')}] but ${src.kind === 'hf' ? 'config.json' : 'the GGUF metadata'} implies [${s.shape.join(', ')}]`);
    }
  }
  return specs;
}

export async function uploadWeights(
  dev: TesseraDevice,
  src: ModelSource,
  opts: { quant?: QuantMode; onProgress?: (p: LoadProgress) => void } = {},
): Promise<GpuWeights> {
  const cfg = src.config;
  const mode = effectiveQuant(opts.quant ?? 'auto', src, dev);
  const f16 = dev.caps.features.has('shader-f16');
  // Expert matrices of sparse layers are uploaded stacked in the moe contract's layout (moe-weights.ts), not as stored.
  const specs = checkWeights(src).filter((s) => !(cfg.moe && isExpertMatrix(s.name)));
  const tensors = new Map<string, Tensor>();
  const storage: Record<string, number> = {};
  const notes = new Set<string>();
  let bytes = 0;
  const addOne = cfg.normAddOne && !src.normsHaveOne;
  try {
    for (let i = 0; i < specs.length; i++) {
      const s = specs[i]!;
      const info = src.info(s.name);
      let data: Uint8Array | Float32Array;
      let dtype: string;
      const K = s.shape[s.shape.length - 1]!;
      const native = info.ggmlType;
      // Which block formats a linear reads at this width is the linear contract's answer.
      const reads = (dtype: string) => s.kind === 'linear' && opAccepts(dev, 'linear', { x: { dtype: 'float32', shape: [1, K] }, w: { dtype, shape: s.shape } });
      if (s.kind === 'linear' && mode === 'file' && native === GgmlType.Q4_K && reads('q4_k')) {
        data = await src.readRaw(s.name);
        dtype = 'q4_k';
      } else if (s.kind === 'linear' && mode === 'file' && native === GgmlType.Q8_0 && reads('q8_0')) {
        data = await src.readRaw(s.name);
        dtype = 'q8_0';
      } else if (s.kind === 'linear' && mode === 'file' && native === GgmlType.Q6_K && reads('q6_k')) {
        // Q4_K_M files keep some tensors (v, down, the LM head) as Q6_K: read in place too
        data = await src.readRaw(s.name);
        dtype = 'q6_k';
      } else {
        const x = await src.toFloat32(s.name);
        if (s.kind === 'norm' && addOne) for (let j = 0; j < x.length; j++) x[j]! += 1;
        const want = s.kind === 'linear' ? (mode === 'file' ? (f16 ? 'f16' : 'f32') : mode) : s.kind === 'embedding' && f16 && mode !== 'f32' ? 'f16' : 'f32';
        if (native !== undefined && mode === 'file') notes.add(`${src.weightsFile}: ggml type ${native} tensors are dequantized on load (no GPU kernel reads them natively)`);
        if (want === 'q4k' && reads('q4_k')) {
          data = quantizeQ4_K(x);
          dtype = 'q4_k';
        } else if (want === 'q8_0' && reads('q8_0')) {
          data = quantizeQ8_0(x);
          dtype = 'q8_0';
        } else if (want === 'f16' || ((want === 'q4k' || want === 'q8_0') && f16)) {
          if (want !== 'f16') notes.add(`${s.name}: the linear contract has no ${want} kernel for inner size ${K} (not a multiple of the block); stored as float16`);
          data = f32ToF16Bytes(x);
          dtype = 'float16';
        } else {
          if (want !== 'f32') notes.add(`${s.name}: the linear contract has no ${want} kernel for inner size ${K} (not a multiple of the block); stored as float32`);
          data = x;
          dtype = 'float32';
        }
      }
      const buffer = uploadBuffer(dev.device, data, s.name);
      tensors.set(s.name, { buffer, dtype, shape: s.shape });
      if (s.kind === 'linear') storage[dtype] = (storage[dtype] ?? 0) + 1;
      bytes += buffer.size;
      opts.onProgress?.({ tensor: s.name, index: i + 1, total: specs.length, bytes });
    }
    for (let l = 0; l < cfg.numLayers; l++) {
      if (!cfg.moe?.sparse[l]) continue;
      for (const t of await gpuExpertTensors(src, l, mode)) {
        const buffer = uploadBuffer(dev.device, t.data, t.name);
        tensors.set(t.name, { buffer, dtype: t.dtype, shape: t.shape });
        if (t.name.endsWith('w_up') || t.name.endsWith('w_down')) {
          const kind = `experts ${t.dtype === 'uint8' ? 'mxfp4' : t.dtype}`;
          storage[kind] = (storage[kind] ?? 0) + 1;
          if (mode === 'f16' && t.dtype === 'float32') notes.add(`${t.name}: the moe contract reads experts as f32, MXFP4, Q8_0, Q4_K or Q6_K, not f16; stored as float32`);
        }
        bytes += buffer.size;
      }
    }
  } catch (e) {
    for (const t of tensors.values()) t.buffer.destroy();
    throw e;
  }
  return {
    mode,
    tensors,
    storage,
    bytes,
    notes: [...notes],
    get(name: string): Tensor {
      const t = tensors.get(name);
      if (!t) throw new MissingTensorError(src.weightsFile, name);
      return t;
    },
    destroy() {
      for (const t of tensors.values()) t.buffer.destroy();
      tensors.clear();
    },
  };
}
