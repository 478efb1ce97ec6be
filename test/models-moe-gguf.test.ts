/**
 * GGUF qwen3moe and gpt-oss files written by our writer in llama.cpp's layout (stacked ffn_{gate,up,down}_exps,
 * ffn_gate_inp router, attn_sinks, MXFP4 expert blocks for gpt-oss) load as the HF folder they were made from: the
 * Qwen3-MoE GGUF runs on the GPU and matches the folder's CPU reference; the gpt-oss GGUF (MXFP4 experts regrouped,
 * never rounded) gives the folder's CPU reference logits, on the CPU reference and on the GPU.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { GgmlType, gv, quantize, quantizeMXFP4, type GgufTensorToWrite } from '../src/formats/index.ts';
import { dequantizeMxfp4Hf, quantizeMxfp4Hf } from '../src/formats/quant/mxfp4.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { loadModel } from '../src/models/load.ts';
import { referenceWeights } from '../src/models/reference-weights.ts';
import { openModelSource } from '../src/models/source.ts';
import { referenceForward } from '../src/reference/llm.ts';
import { computeLogits } from '../src/runtime/logits.ts';
import { testDevice } from './helpers/device.ts';
import { f32, randomTensors, t3, writeModel } from './helpers/moe-fixtures.ts';
import { GPT_OSS_TINY, QWEN3_MOE_TINY } from './helpers/moe-tiny.ts';
import { ggufName } from './helpers/default-gguf.ts';
import { asBytes, moeMeta as meta, writeGgufFile as writeFile } from './helpers/moe-gguf.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

const ids = [5, 17, 99, 3, 64, 2, 77, 31, 8, 120];

function worstRel(a: Float32Array, b: Float32Array, V: number): number {
  let worst = 0;
  for (let t = 0; t < a.length / V; t++) {
    let d = 0;
    let mm = 0;
    for (let i = 0; i < V; i++) {
      d = Math.max(d, Math.abs(a[t * V + i]! - b[t * V + i]!));
      mm = Math.max(mm, Math.abs(b[t * V + i]!));
    }
    worst = Math.max(worst, d / mm);
  }
  return worst;
}

describe('MoE GGUF files (llama.cpp layout)', () => {
  // [label, gate/up type, down type]; Q4_K_M files keep some expert down projections as Q6_K (k-quants need rows of 256)
  it.for([
    ['F32', GgmlType.F32, GgmlType.F32],
    ['Q8_0', GgmlType.Q8_0, GgmlType.Q8_0],
    ['Q4_K gate/up + Q6_K down', GgmlType.Q4_K, GgmlType.Q6_K],
  ] as const)('qwen3moe: stacked %s experts run on the GPU (kept as stored) and match the CPU reference', async ([label, upType, downType]) => {
    // llama.cpp's qwen3moe routes every layer and renormalizes the top-k weights
    const kq = upType === GgmlType.Q4_K;
    const cfg = { ...QWEN3_MOE_TINY, mlp_only_layers: [], norm_topk_prob: true, ...(kq ? { hidden_size: 256, moe_intermediate_size: 256, head_dim: 64 } : {}) };
    const t = randomTensors(cfg, 91);
    const dir = writeModel(cfg, [...t].map(([n, { shape, x }]) => f32(n, shape, x)));
    const { num_experts: E, moe_intermediate_size: I, hidden_size: H } = cfg;
    const tensors: GgufTensorToWrite[] = [];
    for (const [name, { shape, x }] of t) {
      if (/mlp\.experts\./.test(name)) continue;
      tensors.push({ name: ggufName(name, 'qwen3moe'), type: GgmlType.F32, shape, data: asBytes(x) });
    }
    for (let l = 0; l < cfg.num_hidden_layers; l++) {
      for (const [part, rows, cols] of [['gate', I, H], ['up', I, H], ['down', H, I]] as const) {
        const stacked = new Float32Array(E * rows * cols);
        for (let e = 0; e < E; e++) stacked.set(t.get(`model.layers.${l}.mlp.experts.${e}.${part}_proj.weight`)!.x, e * rows * cols);
        const type = part === 'down' ? downType : upType;
        tensors.push({ name: `blk.${l}.ffn_${part}_exps.weight`, type, shape: [E, rows, cols], data: quantize(type, stacked) });
      }
    }
    const file = await writeFile('qwen3moe', meta('qwen3moe', cfg, { 'qwen3moe.expert_count': gv.u32(E), 'qwen3moe.expert_feed_forward_length': gv.u32(I) }), tensors);
    // the reference reads the same file (block experts dequantized); F32: the HF folder too
    const src = await openModelSource(upType === GgmlType.F32 ? dir : file);
    const want = referenceForward(src.config, await referenceWeights(src), ids);
    const model = await loadModel(dev, file, { quant: 'f32', maxPositions: 64 });
    try {
      expect(model.config.architecture).toBe('Qwen3MoeForCausalLM');
      expect(model.config.moe).toMatchObject({ numExperts: E, topK: 2, normTopkProb: true, sparse: [true, true, true, true] });
      const stored = { [GgmlType.F32]: 'float32', [GgmlType.Q8_0]: 'q8_0', [GgmlType.Q4_K]: 'q4_k', [GgmlType.Q6_K]: 'q6_k' };
      expect(model.weights.get('model.layers.0.mlp.experts.w_up').dtype).toBe(stored[upType]);
      expect(model.weights.get('model.layers.0.mlp.experts.w_down').dtype).toBe(stored[downType]);
      const r = await computeLogits(model, ids);
      const err = worstRel(r.all, want, model.config.vocabSize);
      console.log(`qwen3moe GGUF (${label} experts) on the GPU vs the CPU reference: worst relative logit error ${err.toExponential(2)}`);
      expect(err).toBeLessThan(1e-4);
    } finally {
      model.destroy();
    }
  });

  it('gpt-oss: MXFP4 experts, sinks, router and expert biases, YaRN give the HF folder logits (CPU reference and GPU)', async () => {
    const cfg = GPT_OSS_TINY;
    const t = randomTensors(cfg, 93);
    const E = cfg.num_local_experts;
    const I = cfg.intermediate_size;
    const H = cfg.hidden_size;
    const tensors: GgufTensorToWrite[] = [];
    const hf: ReturnType<typeof f32>[] = [];
    for (const [name, { shape, x }] of t) {
      const l = /^model\.layers\.(\d+)\.mlp\.experts\.(.*)$/.exec(name);
      if (!l) {
        hf.push(f32(name, shape, x));
        tensors.push({ name: ggufName(name, 'gpt-oss'), type: GgmlType.F32, shape, data: asBytes(x) });
        continue;
      }
      const [, layer, part] = l;
      if (part === 'gate_up_proj') {
        // experts on the MXFP4 grid (rows = outputs, blocks along H), so both files hold the same numbers
        const q = quantizeMxfp4Hf(t3(x, E, H, 2 * I));
        const rowsOut = dequantizeMxfp4Hf(q.blocks, q.scales); // [E, 2I, H]
        hf.push(f32(name, shape, t3(rowsOut, E, 2 * I, H)));
        const gate = new Float32Array(E * I * H);
        const up = new Float32Array(E * I * H);
        for (let e = 0; e < E; e++) {
          for (let i = 0; i < I; i++) {
            gate.set(rowsOut.subarray((e * 2 * I + 2 * i) * H, (e * 2 * I + 2 * i + 1) * H), (e * I + i) * H);
            up.set(rowsOut.subarray((e * 2 * I + 2 * i + 1) * H, (e * 2 * I + 2 * i + 2) * H), (e * I + i) * H);
          }
        }
        tensors.push({ name: `blk.${layer}.ffn_gate_exps.weight`, type: GgmlType.MXFP4, shape: [E, I, H], data: quantizeMXFP4(gate) });
        tensors.push({ name: `blk.${layer}.ffn_up_exps.weight`, type: GgmlType.MXFP4, shape: [E, I, H], data: quantizeMXFP4(up) });
      } else if (part === 'down_proj') {
        const q = quantizeMxfp4Hf(t3(x, E, I, H));
        const rowsOut = dequantizeMxfp4Hf(q.blocks, q.scales); // [E, H, I]
        hf.push(f32(name, shape, t3(rowsOut, E, H, I)));
        tensors.push({ name: `blk.${layer}.ffn_down_exps.weight`, type: GgmlType.MXFP4, shape: [E, H, I], data: quantizeMXFP4(rowsOut) });
      } else if (part === 'gate_up_proj_bias') {
        hf.push(f32(name, shape, x));
        const g = new Float32Array(E * I);
        const u = new Float32Array(E * I);
        for (let j = 0; j < E * I; j++) {
          g[j] = x[2 * j]!;
          u[j] = x[2 * j + 1]!;
        }
        tensors.push({ name: `blk.${layer}.ffn_gate_exps.bias`, type: GgmlType.F32, shape: [E, I], data: asBytes(g) });
        tensors.push({ name: `blk.${layer}.ffn_up_exps.bias`, type: GgmlType.F32, shape: [E, I], data: asBytes(u) });
      } else if (part === 'down_proj_bias') {
        hf.push(f32(name, shape, x));
        tensors.push({ name: `blk.${layer}.ffn_down_exps.bias`, type: GgmlType.F32, shape: [E, H], data: asBytes(x) });
      } else throw new Error(`unexpected ${name}`);
    }
    const rp = cfg.rope_parameters;
    const file = await writeFile(
      'gpt-oss',
      meta('gpt-oss', cfg, {
        'gpt-oss.expert_count': gv.u32(E),
        'gpt-oss.expert_feed_forward_length': gv.u32(I),
        'gpt-oss.attention.sliding_window': gv.u32(cfg.sliding_window),
        'gpt-oss.rope.scaling.type': gv.str('yarn'),
        'gpt-oss.rope.scaling.factor': gv.f32(rp.factor),
        'gpt-oss.rope.scaling.original_context_length': gv.u32(rp.original_max_position_embeddings),
      }),
      tensors,
    );
    const a = await openModelSource(writeModel(cfg, hf));
    const b = await openModelSource(file);
    expect(b.config.architecture).toBe('GptOssForCausalLM');
    expect(b.config.slidingWindow).toEqual(a.config.slidingWindow);
    expect(b.config.ropeScaling).toEqual(a.config.ropeScaling);
    expect(b.info('model.layers.0.mlp.experts.gate_exps').ggmlType).toBe(GgmlType.MXFP4);
    const la = referenceForward(a.config, await referenceWeights(a), ids);
    const lb = referenceForward(b.config, await referenceWeights(b), ids);
    const err = worstRel(lb, la, a.config.vocabSize);
    console.log(`gpt-oss GGUF (MXFP4 experts) vs the HF folder, CPU reference: worst relative logit error ${err.toExponential(2)}`);
    // rms_norm_eps and the rope base pass through f32 metadata: the only differences
    expect(err).toBeLessThan(1e-5);
    // and on the GPU: MXFP4 experts read in place, sinks, YaRN
    const model = await loadModel(dev, file, { quant: 'f32', maxPositions: 64 });
    try {
      expect(model.weights.get('model.layers.0.mlp.experts.w_up').dtype).toBe('uint8');
      const r = await computeLogits(model, ids);
      const gerr = worstRel(r.all, la, a.config.vocabSize);
      console.log(`gpt-oss GGUF on the GPU vs the HF folder's CPU reference: worst relative logit error ${gerr.toExponential(2)}`);
      expect(gerr).toBeLessThan(1e-4);
    } finally {
      model.destroy();
    }
  });
});
