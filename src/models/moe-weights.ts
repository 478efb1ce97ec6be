/**
 * Expert matrices of a sparse layer in the layout the moe contract reads (src/ops/contracts/moe.contract.json): rows =
 * output features, contiguous along the input, stacked over experts: w_up [E, 2I, H], w_down [E, H, I] in float32, or
 * the MXFP4 blocks and e8m0 scales as gpt-oss stores them ([E, rows, in/32, 16] + [E, rows, in/32], uint8, read in
 * place). From transformers' gpt-oss parameters ([E, in, out]: transposed here), Qwen3-MoE stacked tensors (already
 * rows = outputs) or per-expert tensors (stacked here).
 */
import { GgmlType, ggmlByteSize, ggmlTypeInfo } from '../formats/quant/ggml-types.ts';
import { quantizeQ4_K, quantizeQ8_0 } from '../formats/quant/index.ts';
import { mxfp4GgufToHf } from '../formats/quant/mxfp4.ts';
import type { ModelSource } from './source.ts';

export interface ExpertTensor {
  /**
   * model.layers.L.mlp.experts.{w_up, w_down, w_up_scales, w_down_scales}, and for GGUF gpt-oss the biases in the
   * transformers form the decoder binds (gate_up_proj_bias interleaved [E, 2I], down_proj_bias [E, H]).
   */
  name: string;
  /** uint8: MXFP4 blocks (with a `_scales` tensor); q8_0 / q4_k / q6_k: ggml blocks of each row. */
  dtype: 'float32' | 'uint8' | ExpertBlockFormat;
  shape: number[];
  data: Float32Array | Uint8Array;
}

/** [E, R, C] -> [E, C, R] */
export function transpose3(x: Float32Array, E: number, R: number, C: number): Float32Array {
  const y = new Float32Array(x.length);
  for (let e = 0; e < E; e++) {
    const o = e * R * C;
    for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) y[o + c * R + r] = x[o + r * C + c]!;
  }
  return y;
}

/** The ggml block formats the moe contract reads in place: expert dtype -> ggml type. */
export const EXPERT_GGML_TYPES = { q8_0: GgmlType.Q8_0, q4_k: GgmlType.Q4_K, q6_k: GgmlType.Q6_K } as const;
type ExpertBlockFormat = keyof typeof EXPERT_GGML_TYPES;

/** The block format of rows of `K` inputs stored as ggml `type`, if the moe contract reads them in place. */
function ggmlRows(type: number | undefined, K: number): ExpertBlockFormat | undefined {
  const fmt = (Object.keys(EXPERT_GGML_TYPES) as ExpertBlockFormat[]).find((f) => EXPERT_GGML_TYPES[f] === type);
  return fmt && K % ggmlTypeInfo(EXPERT_GGML_TYPES[fmt])!.blockSize === 0 ? fmt : undefined;
}

/** Float rows quantized for `quant` where the rows fit its blocks (else kept f32). */
function quantRows(name: string, x: Float32Array, shape: number[], quant: string | undefined): ExpertTensor {
  const K = shape[shape.length - 1]!;
  if (quant === 'q8_0' && K % 32 === 0) return { name, dtype: 'q8_0', shape, data: quantizeQ8_0(x) };
  if (quant === 'q4k' && K % 256 === 0) return { name, dtype: 'q4_k', shape, data: quantizeQ4_K(x) };
  return { name, dtype: 'float32', shape, data: x };
}

/**
 * The GPU expert tensors of sparse layer l. `quant` (the load's quantization mode) quantizes float experts to Q8_0
 * (`q8_0`) or Q4_K (`q4k`) where their widths fit the blocks; MXFP4 and GGUF block experts stay as stored.
 */
export async function gpuExpertTensors(src: ModelSource, l: number, quant?: string): Promise<ExpertTensor[]> {
  const cfg = src.config;
  const m = cfg.moe!;
  const E = m.numExperts;
  const H = cfg.hiddenSize;
  const I = m.expertIntermediateSize;
  const x = `model.layers.${l}.mlp.experts.`;
  if (src.has(x + 'gate_exps')) return ggufExperts(src, l);
  if (m.kind === 'gpt_oss' && m.expertFormat === 'mxfp4') {
    return [
      { name: x + 'w_up', dtype: 'uint8', shape: [E, 2 * I, H / 32, 16], data: await src.readRaw(x + 'gate_up_proj_blocks') },
      { name: x + 'w_up_scales', dtype: 'uint8', shape: [E, 2 * I, H / 32], data: await src.readRaw(x + 'gate_up_proj_scales') },
      { name: x + 'w_down', dtype: 'uint8', shape: [E, H, I / 32, 16], data: await src.readRaw(x + 'down_proj_blocks') },
      { name: x + 'w_down_scales', dtype: 'uint8', shape: [E, H, I / 32], data: await src.readRaw(x + 'down_proj_scales') },
    ];
  }
  let up: Float32Array;
  let down: Float32Array;
  if (m.kind === 'gpt_oss') {
    up = transpose3(await src.toFloat32(x + 'gate_up_proj'), E, H, 2 * I);
    down = transpose3(await src.toFloat32(x + 'down_proj'), E, I, H);
  } else if (src.has(x + 'gate_up_proj')) {
    up = await src.toFloat32(x + 'gate_up_proj');
    down = await src.toFloat32(x + 'down_proj');
  } else {
    up = new Float32Array(E * 2 * I * H);
    down = new Float32Array(E * H * I);
    for (let e = 0; e < E; e++) {
      up.set(await src.toFloat32(`${x}${e}.gate_proj.weight`), e * 2 * I * H);
      up.set(await src.toFloat32(`${x}${e}.up_proj.weight`), e * 2 * I * H + I * H);
      down.set(await src.toFloat32(`${x}${e}.down_proj.weight`), e * H * I);
    }
  }
  return [quantRows(x + 'w_up', up, [E, 2 * I, H], quant), quantRows(x + 'w_down', down, [E, H, I], quant)];
}

/** Rows of two [E, R, C] arrays (elements of `rowLen` units) merged per expert: interleaved (a0 b0 a1 b1 ..) or a then b. */
function mergeRows<T extends Float32Array | Uint8Array>(a: T, b: T, E: number, R: number, rowLen: number, interleave: boolean): T {
  const out = new (a.constructor as { new (n: number): T })(a.length * 2);
  for (let e = 0; e < E; e++) {
    for (let r = 0; r < R; r++) {
      const src = (e * R + r) * rowLen;
      const ra = interleave ? 2 * r : r;
      const rb = interleave ? 2 * r + 1 : R + r;
      out.set(a.subarray(src, src + rowLen), (e * 2 * R + ra) * rowLen);
      out.set(b.subarray(src, src + rowLen), (e * 2 * R + rb) * rowLen);
    }
  }
  return out;
}

/**
 * llama.cpp's stacked gate / up / down (GGUF): gate and up rows merged into w_up (gpt-oss interleaves them, as
 * transformers' gate_up_proj; Qwen puts gate rows first). MXFP4 stays MXFP4 (ggml's 17-byte blocks regrouped into the
 * transformers layout, no rounding), Q8_0, Q4_K and Q6_K rows (Q4_K_M files keep some down projections as Q6_K) stay as
 * stored (whole blocks per row); other ggml types (F16, BF16, other k-quants) are dequantized to f32.
 */
async function ggufExperts(src: ModelSource, l: number): Promise<ExpertTensor[]> {
  const cfg = src.config;
  const m = cfg.moe!;
  const E = m.numExperts;
  const H = cfg.hiddenSize;
  const I = m.expertIntermediateSize;
  const x = `model.layers.${l}.mlp.experts.`;
  const gpt = m.kind === 'gpt_oss';
  const out: ExpertTensor[] = [];
  const type = (n: string) => src.info(x + n).ggmlType;
  // gate and up rows merge into w_up: they must share a block format to stay in it
  const upType = type('gate_exps') === type('up_exps') ? type('gate_exps') : undefined;
  if (upType === GgmlType.MXFP4) {
    const g = mxfp4GgufToHf(await src.readRaw(x + 'gate_exps'), E * I * H);
    const u = mxfp4GgufToHf(await src.readRaw(x + 'up_exps'), E * I * H);
    out.push(
      { name: x + 'w_up', dtype: 'uint8', shape: [E, 2 * I, H / 32, 16], data: mergeRows(g.blocks, u.blocks, E, I, H / 2, gpt) },
      { name: x + 'w_up_scales', dtype: 'uint8', shape: [E, 2 * I, H / 32], data: mergeRows(g.scales, u.scales, E, I, H / 32, gpt) },
    );
  } else {
    const fmt = ggmlRows(upType, H);
    if (fmt) {
      const rowBytes = ggmlByteSize(ggmlTypeInfo(EXPERT_GGML_TYPES[fmt])!, H);
      out.push({ name: x + 'w_up', dtype: fmt, shape: [E, 2 * I, H], data: mergeRows(await src.readRaw(x + 'gate_exps'), await src.readRaw(x + 'up_exps'), E, I, rowBytes, gpt) });
    } else {
      out.push({ name: x + 'w_up', dtype: 'float32', shape: [E, 2 * I, H], data: mergeRows(await src.toFloat32(x + 'gate_exps'), await src.toFloat32(x + 'up_exps'), E, I, H, gpt) });
    }
  }
  const downType = type('down_exps');
  if (downType === GgmlType.MXFP4) {
    const d = mxfp4GgufToHf(await src.readRaw(x + 'down_exps'), E * H * I);
    out.push(
      { name: x + 'w_down', dtype: 'uint8', shape: [E, H, I / 32, 16], data: d.blocks },
      { name: x + 'w_down_scales', dtype: 'uint8', shape: [E, H, I / 32], data: d.scales },
    );
  } else {
    const fmt = ggmlRows(downType, I);
    out.push(
      fmt
        ? { name: x + 'w_down', dtype: fmt, shape: [E, H, I], data: await src.readRaw(x + 'down_exps') }
        : { name: x + 'w_down', dtype: 'float32', shape: [E, H, I], data: await src.toFloat32(x + 'down_exps') },
    );
  }
  if (gpt) {
    const gb = await src.toFloat32(x + 'gate_exps_bias');
    const ub = await src.toFloat32(x + 'up_exps_bias');
    out.push(
      { name: x + 'gate_up_proj_bias', dtype: 'float32', shape: [E, 2 * I], data: mergeRows(gb, ub, E, I, 1, true) },
      { name: x + 'down_proj_bias', dtype: 'float32', shape: [E, H], data: await src.toFloat32(x + 'down_exps_bias') },
    );
  }
  return out;
}

/** Whether a checkpoint tensor is an expert matrix (or a GGUF expert bias) that gpuExpertTensors uploads, not as stored. */
export function isExpertMatrix(name: string): boolean {
  return /\.mlp\.experts\.(\d+\.(gate|up|down)_proj\.weight|gate_up_proj|down_proj|(gate_up|down)_proj_(blocks|scales)|(gate|up|down)_exps(_bias)?)$/.test(name);
}
