/**
 * Qwen3-MoE on the GPU (the decoder's sparse layers as one `moe` contract call): a Qwen3-MoE whose experts all equal
 * the dense qwen3 fixture's MLP reproduces transformers' goldens of that fixture; random experts match the CPU
 * reference (logits and greedy ids). gpt-oss (sinks through sink_scale, YaRN, sliding window, biases, float and MXFP4
 * experts) matches the CPU reference in prefill and decode.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { decoderConfigFromHF } from '../src/models/config.ts';
import { loadModel } from '../src/models/load.ts';
import { randomModel } from '../src/models/random-weights.ts';
import { opAccepts } from '../src/ops/runner.ts';
import { referenceWeights } from '../src/models/reference-weights.ts';
import { openModelSource } from '../src/models/source.ts';
import { referenceForward, referenceGreedy } from '../src/reference/llm.ts';
import { computeLogits } from '../src/runtime/logits.ts';
import { generate } from '../src/runtime/generate.ts';
import { testDevice } from './helpers/device.ts';
import { f32, moeFromDense, QWEN3_DENSE, randomTensors, t3, u8, writeModel } from './helpers/moe-fixtures.ts';
import { dequantizeMxfp4Hf, quantizeMxfp4Hf } from '../src/formats/quant/mxfp4.ts';
import { GPT_OSS_TINY, QWEN3_MOE_TINY } from './helpers/moe-tiny.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0;
  let m = 0;
  for (let i = 0; i < b.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - b[i]!));
    m = Math.max(m, Math.abs(b[i]!));
  }
  return d / m;
}

describe('Qwen3-MoE on the GPU', () => {
  it('identical experts: transformers goldens of the dense qwen3 fixture (logits and greedy ids)', async () => {
    const g = JSON.parse(readFileSync(`${QWEN3_DENSE}/golden.json`, 'utf8')) as { input_ids: number[]; logits: number[][]; argmax: number[]; greedy: { prompt_ids: number[]; new_ids: number[] } };
    const model = await loadModel(dev, await moeFromDense(false), { quant: 'f32', maxPositions: 64 });
    try {
      expect(model.weights.get('model.layers.0.mlp.experts.w_up').shape).toEqual([4, 256, 64]); // stacked, rows = outputs
      expect(model.weights.tensors.has('model.layers.1.mlp.experts.w_up')).toBe(false); // mlp_only_layers: dense
      const r = await computeLogits(model, g.input_ids);
      const V = model.config.vocabSize;
      let worst = 0;
      for (let t = 0; t < g.input_ids.length; t++) worst = Math.max(worst, relErr(r.all.subarray(t * V, (t + 1) * V), g.logits[t]!));
      console.log(`qwen3-moe (experts = qwen3 MLP) on the GPU: worst relative logit error ${worst.toExponential(2)}`);
      expect(worst).toBeLessThan(1e-3);
      expect(r.argmax).toEqual(g.argmax);
      const gen = await generate(model, g.greedy.prompt_ids, { maxTokens: g.greedy.new_ids.length, temperature: 0, ignoreEos: true });
      expect(gen.ids).toEqual(g.greedy.new_ids);
    } finally {
      model.destroy();
    }
  });

  it.for([
    ['per-expert', false],
    ['stacked', true],
  ] as const)('random experts (%s tensors) match the CPU reference', async ([, stacked]) => {
    const t = randomTensors(QWEN3_MOE_TINY, 77);
    const tensors = [...t].map(([n, { shape, x }]) => f32(n, shape, x));
    let written = tensors;
    if (stacked) {
      // stack mlp.experts.e.* into transformers 5's gate_up_proj [E, 2I, H] / down_proj [E, H, I]
      const cfg = { E: QWEN3_MOE_TINY.num_experts, I: QWEN3_MOE_TINY.moe_intermediate_size, H: QWEN3_MOE_TINY.hidden_size };
      written = tensors.filter((x) => !/mlp\.experts\.\d+\./.test(x.name));
      for (let l = 0; l < QWEN3_MOE_TINY.num_hidden_layers; l++) {
        const p = `model.layers.${l}.mlp.experts.`;
        if (!t.has(`${p}0.gate_proj.weight`)) continue;
        const gu = new Float32Array(cfg.E * 2 * cfg.I * cfg.H);
        const dn = new Float32Array(cfg.E * cfg.H * cfg.I);
        for (let e = 0; e < cfg.E; e++) {
          gu.set(t.get(`${p}${e}.gate_proj.weight`)!.x, e * 2 * cfg.I * cfg.H);
          gu.set(t.get(`${p}${e}.up_proj.weight`)!.x, e * 2 * cfg.I * cfg.H + cfg.I * cfg.H);
          dn.set(t.get(`${p}${e}.down_proj.weight`)!.x, e * cfg.H * cfg.I);
        }
        written.push(f32(p + 'gate_up_proj', [cfg.E, 2 * cfg.I, cfg.H], gu), f32(p + 'down_proj', [cfg.E, cfg.H, cfg.I], dn));
      }
    }
    const dir = writeModel(QWEN3_MOE_TINY, written);
    const src = await openModelSource(dir);
    const w = await referenceWeights(src);
    const ids = [5, 17, 99, 3, 64, 2, 77, 31, 8];
    const want = referenceForward(src.config, w, ids);
    const model = await loadModel(dev, dir, { quant: 'f32', maxPositions: 64 });
    try {
      const r = await computeLogits(model, ids);
      const V = model.config.vocabSize;
      let worst = 0;
      for (let t2 = 0; t2 < ids.length; t2++) worst = Math.max(worst, relErr(r.all.subarray(t2 * V, (t2 + 1) * V), want.subarray(t2 * V, (t2 + 1) * V)));
      expect(worst).toBeLessThan(1e-4);
      const gen = await generate(model, ids.slice(0, 4), { maxTokens: 5, temperature: 0, ignoreEos: true });
      expect(gen.ids).toEqual(referenceGreedy(src.config, w, ids.slice(0, 4), 5));
    } finally {
      model.destroy();
    }
  });
});

describe('gpt-oss on the GPU', () => {
  /** A random tiny gpt-oss (3 layers: sliding / full / sliding, window 4, YaRN, sinks, biases) in float or MXFP4 form. */
  function gptOss(seed: number, mxfp4: boolean): string {
    const t = randomTensors(GPT_OSS_TINY, seed);
    const E = GPT_OSS_TINY.num_local_experts;
    const I = GPT_OSS_TINY.intermediate_size;
    const H = GPT_OSS_TINY.hidden_size;
    const out: ReturnType<typeof f32>[] = [];
    for (const [name, { shape, x }] of t) {
      const m = /mlp\.experts\.(gate_up_proj|down_proj)$/.exec(name);
      if (!m) {
        out.push(f32(name, shape, x));
        continue;
      }
      const [inn, outF] = m[1] === 'gate_up_proj' ? [H, 2 * I] : [I, H];
      const q = quantizeMxfp4Hf(t3(x, E, inn, outF));
      if (mxfp4) out.push(u8(name + '_blocks', [E, outF, inn / 32, 16], q.blocks), u8(name + '_scales', [E, outF, inn / 32], q.scales));
      else out.push(f32(name, shape, t3(dequantizeMxfp4Hf(q.blocks, q.scales), E, outF, inn)));
    }
    return writeModel(mxfp4 ? { ...GPT_OSS_TINY, quantization_config: { quant_method: 'mxfp4' } } : GPT_OSS_TINY, out);
  }

  it.for([
    ['float', false],
    ['MXFP4', true],
  ] as const)('%s experts: logits at every position and greedy ids match the CPU reference (prompt longer than the window)', async ([label, mx]) => {
    const dir = gptOss(5, mx);
    const src = await openModelSource(dir);
    const w = await referenceWeights(src);
    const ids = [5, 17, 99, 3, 64, 2, 77, 31, 8, 120, 45];
    const want = referenceForward(src.config, w, ids);
    const model = await loadModel(dev, dir, { quant: 'f32', maxPositions: 64 });
    try {
      expect(model.weights.get('model.layers.0.mlp.experts.w_up').dtype).toBe(mx ? 'uint8' : 'float32');
      const r = await computeLogits(model, ids);
      const V = model.config.vocabSize;
      let worst = 0;
      for (let t2 = 0; t2 < ids.length; t2++) worst = Math.max(worst, relErr(r.all.subarray(t2 * V, (t2 + 1) * V), want.subarray(t2 * V, (t2 + 1) * V)));
      console.log(`gpt-oss (${label} experts) on the GPU vs the CPU reference: worst relative logit error ${worst.toExponential(2)}`);
      expect(worst).toBeLessThan(1e-4);
      // decode steps (one token at a time through the KV cache) past the window
      const gen = await generate(model, ids.slice(0, 6), { maxTokens: 6, temperature: 0, ignoreEos: true });
      expect(gen.ids).toEqual(referenceGreedy(src.config, w, ids.slice(0, 6), 6));
    } finally {
      model.destroy();
    }
  });
});

describe('random MoE models (bench/serve presets)', () => {
  it.for([
    ['gpt-oss, MXFP4 experts', { ...GPT_OSS_TINY, quantization_config: { quant_method: 'mxfp4' } }, 'f32', 'experts mxfp4'],
    ['Qwen3-MoE, Q4_K experts', { ...QWEN3_MOE_TINY, hidden_size: 256, moe_intermediate_size: 256, num_attention_heads: 4, head_dim: 64, mlp_only_layers: [] }, 'q4k', 'experts q4_k'],
  ] as const)('%s: finite logits, decode runs', async ([, raw, quant, kind]) => {
    const cfg = decoderConfigFromHF(raw as Record<string, unknown>);
    const H = cfg.hiddenSize;
    const q4 = (M: number, N: number) => opAccepts(dev, 'linear', { x: { dtype: 'float32', shape: [M, H] }, w: { dtype: 'q4_k', shape: [N, H] } });
    if (quant === 'q4k' && ![1, 5].every((M) => q4(M, cfg.vocabSize) && q4(M, cfg.numHeads * cfg.headDim))) {
      console.log(`skipped on ${dev.caps.adapterInfo.vendor} ${dev.caps.adapterInfo.architecture}: the linear contract reads no Q4_K here (the GPU lane runs it)`);
      return;
    }
    const model = randomModel(dev, cfg, quant, { decoder: { maxPositions: 32 }, f32Embedding: !dev.caps.features.has('shader-f16') });
    try {
      expect(model.weights.storage[kind]).toBe(2 * cfg.moe!.sparse.filter(Boolean).length);
      const r = await computeLogits(model, [1, 2, 3, 4, 5]);
      expect(r.all.every(Number.isFinite)).toBe(true);
      const gen = await generate(model, [1, 2, 3], { maxTokens: 4, temperature: 0, ignoreEos: true });
      expect(gen.ids.length).toBe(4);
    } finally {
      model.destroy();
    }
  });
});
