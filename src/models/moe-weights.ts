/**
 * Expert matrices of a sparse layer in the layout the moe contract reads (src/ops/contracts/moe.contract.json): rows =
 * output features, contiguous along the input, stacked over experts: w_up [E, 2I, H], w_down [E, H, I] in float32, or
 * the MXFP4 blocks and e8m0 scales as gpt-oss stores them ([E, rows, in/32, 16] + [E, rows, in/32], uint8, read in
 * place). From transformers' gpt-oss parameters ([E, in, out]: transposed here), Qwen3-MoE stacked tensors (already
 * rows = outputs) or per-expert tensors (stacked here).
 */
import type { ModelSource } from './source.ts';

export interface ExpertTensor {
  /** model.layers.L.mlp.experts.{w_up, w_down, w_up_scales, w_down_scales} */
  name: string;
  dtype: 'float32' | 'uint8';
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

/** The GPU expert tensors of sparse layer l. */
export async function gpuExpertTensors(src: ModelSource, l: number): Promise<ExpertTensor[]> {
  const cfg = src.config;
  const m = cfg.moe!;
  const E = m.numExperts;
  const H = cfg.hiddenSize;
  const I = m.expertIntermediateSize;
  const x = `model.layers.${l}.mlp.experts.`;
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
  return [
    { name: x + 'w_up', dtype: 'float32', shape: [E, 2 * I, H], data: up },
    { name: x + 'w_down', dtype: 'float32', shape: [E, H, I], data: down },
  ];
}

/** Whether a checkpoint tensor is an expert matrix that gpuExpertTensors uploads (not as stored). */
export function isExpertMatrix(name: string): boolean {
  return /\.mlp\.experts\.(\d+\.(gate|up|down)_proj\.weight|gate_up_proj|down_proj|(gate_up|down)_proj_(blocks|scales))$/.test(name);
}
