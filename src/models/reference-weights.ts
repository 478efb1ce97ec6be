/**
 * Every tensor of a model source as f32 under the names the CPU reference (reference/llm.ts, reference/moe.ts) reads.
 * Expert matrices are brought to transformers' parameter layout whatever form the checkpoint stores:
 * - gpt-oss MXFP4 (`*_blocks` [E, rows, K/32, 16] + `*_scales`): dequantized bit-exactly, then transposed to
 *   gate_up_proj [E, H, 2I] / down_proj [E, I, H] (transformers' convert_moe_packed_tensors does the same);
 * - Qwen3-MoE per-expert `mlp.experts.e.{gate,up,down}_proj.weight`: stacked to gate_up_proj [E, 2I, H] (gate rows
 *   first) and down_proj [E, H, I].
 * For tests and tiny models: the whole model is held in f32.
 */
import { dequantizeMxfp4Hf } from '../formats/quant/mxfp4.ts';
import type { WeightMap } from '../reference/llm.ts';
import { ModelConfigError } from './errors.ts';
import type { ModelSource } from './source.ts';
import { transpose3 } from './moe-weights.ts';
import { checkWeights } from './weights.ts';

export async function referenceWeights(src: ModelSource): Promise<WeightMap> {
  const specs = checkWeights(src);
  const cfg = src.config;
  const out = new Map<string, Float32Array>();
  const raw = new Map<string, Uint8Array>();
  for (const s of specs) {
    if (s.kind === 'mxfp4') raw.set(s.name, await src.readRaw(s.name));
    else out.set(s.name, await src.toFloat32(s.name));
  }
  const m = cfg.moe;
  if (m) {
    const E = m.numExperts;
    const H = cfg.hiddenSize;
    const I = m.expertIntermediateSize;
    for (let l = 0; l < cfg.numLayers; l++) {
      if (!m.sparse[l]) continue;
      const x = `model.layers.${l}.mlp.experts.`;
      if (m.kind === 'gpt_oss' && m.expertFormat === 'mxfp4') {
        for (const [proj, rows, cols] of [['gate_up_proj', 2 * I, H], ['down_proj', H, I]] as const) {
          const blocks = raw.get(x + proj + '_blocks')!;
          const scales = raw.get(x + proj + '_scales')!;
          if (blocks.length !== scales.length * 16) {
            throw new ModelConfigError(src.weightsFile, x + proj + '_blocks', `holds ${blocks.length} bytes for ${scales.length} scales (expected 16 per scale; is it stored as U8?)`);
          }
          // [E, rows, cols] row-major as stored -> transformers' parameter [E, cols, rows]
          out.set(x + proj, transpose3(dequantizeMxfp4Hf(blocks, scales), E, rows, cols));
        }
      } else if (m.kind === 'qwen3_moe' && !out.has(x + 'gate_up_proj')) {
        const gateUp = new Float32Array(E * 2 * I * H);
        const down = new Float32Array(E * H * I);
        for (let e = 0; e < E; e++) {
          const g = out.get(`${x}${e}.gate_proj.weight`)!;
          const u = out.get(`${x}${e}.up_proj.weight`)!;
          gateUp.set(g, e * 2 * I * H);
          gateUp.set(u, e * 2 * I * H + I * H);
          down.set(out.get(`${x}${e}.down_proj.weight`)!, e * H * I);
        }
        out.set(x + 'gate_up_proj', gateUp);
        out.set(x + 'down_proj', down);
      }
    }
  }
  return (name) => out.get(name);
}
