/**
 * Qwen3-MoE on the GPU (the decoder's sparse layers as one `moe` contract call): a Qwen3-MoE whose experts all equal
 * the dense qwen3 fixture's MLP reproduces transformers' goldens of that fixture; random experts match the CPU
 * reference (logits and greedy ids). gpt-oss loads only on the CPU reference until attention sinks have a kernel.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { loadModel } from '../src/models/load.ts';
import { referenceWeights } from '../src/models/reference-weights.ts';
import { openModelSource } from '../src/models/source.ts';
import { referenceForward, referenceGreedy } from '../src/reference/llm.ts';
import { computeLogits } from '../src/runtime/logits.ts';
import { generate } from '../src/runtime/generate.ts';
import { testDevice } from './helpers/device.ts';
import { f32, moeFromDense, QWEN3_DENSE, randomTensors, writeModel } from './helpers/moe-fixtures.ts';
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
  it('is refused with the reason (attention sinks) and the file, before anything is uploaded', async () => {
    const t = randomTensors(GPT_OSS_TINY, 1);
    const dir = writeModel(GPT_OSS_TINY, [...t].map(([n, { shape, x }]) => f32(n, shape, x)));
    await expect(loadModel(dev, dir, { quant: 'f32' })).rejects.toThrow(/config\.json: architectures: GptOssForCausalLM: attention sinks \(self_attn\.sinks\) have no GPU kernel yet/);
  });
});
