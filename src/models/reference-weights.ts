/**
 * Every tensor of a model source as f32 under the names the CPU reference (reference/llm.ts, reference/moe.ts) reads.
 * Expert matrices are brought to transformers' parameter layout whatever form the checkpoint stores:
 * - gpt-oss MXFP4 (`*_blocks` [E, rows, K/32, 16] + `*_scales`): dequantized bit-exactly, then transposed to
 *   gate_up_proj [E, H, 2I] / down_proj [E, I, H] (transformers' convert_moe_packed_tensors does the same);
 * - Qwen3-MoE per-expert `mlp.experts.e.{gate,up,down}_proj.weight`: stacked to gate_up_proj [E, 2I, H] (gate rows
 *   first) and down_proj [E, H, I];
 * - GGUF's stacked gate / up / down (any ggml type, MXFP4 included): merged the same way (moe-weights.ts), biases too.
 * For tests and tiny models: the whole model is held in f32.
 */
import { dequantize } from '../formats/quant/index.ts';
import { dequantizeMxfp4Hf } from '../formats/quant/mxfp4.ts';
import type { WeightMap } from '../reference/llm.ts';
import { ModelConfigError } from './errors.ts';
import type { ModelSource } from './source.ts';
import { EXPERT_GGML_TYPES, gpuExpertTensors, isExpertMatrix, transpose3 } from './moe-weights.ts';
import { checkWeights } from './weights.ts';

export async function referenceWeights(src: ModelSource): Promise<WeightMap> {
  const specs = checkWeights(src);
  const cfg = src.config;
  const out = new Map<string, Float32Array>();
  for (const s of specs) {
    // expert matrices are read below, in one layout whatever their stored form
    if (cfg.moe && isExpertMatrix(s.name)) continue;
    out.set(s.name, await src.toFloat32(s.name));
  }
  const m = cfg.moe;
  if (m) {
    const E = m.numExperts;
    const H = cfg.hiddenSize;
    const I = m.expertIntermediateSize;
    for (let l = 0; l < cfg.numLayers; l++) {
      if (!m.sparse[l]) continue;
      const x = `model.layers.${l}.mlp.experts.`;
      // the GPU layout (rows = outputs, MXFP4 kept) from any stored form, then the reference's parameter layout
      const gpu = new Map((await gpuExpertTensors(src, l)).map((t) => [t.name, t]));
      const rows = (n: string): Float32Array => {
        const t = gpu.get(x + n)!;
        if (t.dtype === 'float32') return t.data as Float32Array;
        if (t.dtype !== 'uint8') return dequantize(EXPERT_GGML_TYPES[t.dtype], t.data as Uint8Array, t.shape.reduce((a, b) => a * b, 1));
        const blocks = t.data as Uint8Array;
        const scales = gpu.get(x + n + '_scales')!.data as Uint8Array;
        if (blocks.length !== scales.length * 16) {
          throw new ModelConfigError(src.weightsFile, x + n, `MXFP4 blocks hold ${blocks.length} bytes for ${scales.length} scales (expected 16 per scale; stored as U8?)`);
        }
        return dequantizeMxfp4Hf(blocks, scales);
      };
      const up = rows('w_up');
      const down = rows('w_down');
      // gpt-oss parameters are [E, in, out]; Qwen's stacked ones [E, out, in] (the GPU layout)
      out.set(x + 'gate_up_proj', m.kind === 'gpt_oss' ? transpose3(up, E, 2 * I, H) : up);
      out.set(x + 'down_proj', m.kind === 'gpt_oss' ? transpose3(down, E, H, I) : down);
      for (const b of ['gate_up_proj_bias', 'down_proj_bias']) {
        const t = gpu.get(x + b);
        if (t) out.set(x + b, t.data as Float32Array);
      }
    }
  }
  return (name) => out.get(name);
}
