/**
 * CPU reference of gpt-oss and Qwen3-MoE (reference/moe.ts, reference/llm.ts) through the loader
 * (models/reference-weights.ts): router and expert semantics on worked numbers; storage forms that hold the same
 * numbers give the same logits; a Qwen3-MoE whose experts all equal a dense MLP reproduces transformers' goldens of
 * that dense Qwen3 (test/fixtures/hf/qwen3); sliding window and attention sinks behave as transformers' eager path.
 * Goldens of the MoE models themselves come from scripts/goldens-moe.py on the GPU machine.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import type { TensorToWrite } from '../src/formats/safetensors.ts';
import { dequantizeMxfp4Hf, quantizeMxfp4Hf } from '../src/formats/quant/mxfp4.ts';
import { decoderConfigFromHF, type MoeConfig } from '../src/models/config.ts';
import { referenceWeights } from '../src/models/reference-weights.ts';
import { openModelSource } from '../src/models/source.ts';
import { referenceForward, referenceGreedy, type WeightMap } from '../src/reference/llm.ts';
import { expertForward, route, topK } from '../src/reference/moe.ts';
import { GPT_OSS_TINY, QWEN3_MOE_TINY } from './helpers/moe-tiny.ts';
import { f32, moeFromDense, QWEN3_DENSE, randomTensors, t3, u8, writeModel } from './helpers/moe-fixtures.ts';

async function loadRef(dir: string) {
  const src = await openModelSource(dir);
  return { cfg: src.config, w: await referenceWeights(src) };
}

const ids = [5, 17, 99, 3, 64, 2, 77, 31, 8, 120, 45, 11];

function maxAbs(a: Float32Array, b: Float32Array): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

describe('router', () => {
  const base: MoeConfig = {
    kind: 'gpt_oss', numExperts: 4, topK: 2, expertIntermediateSize: 1, routing: 'topk_softmax', normTopkProb: false,
    routerBias: true, expertBias: true, activation: 'swiglu_clamped', swigluAlpha: 1.702, swigluLimit: 7, expertFormat: 'float', sparse: [true],
  };
  // identity router weights: the logits are x (+ bias)
  const eye = new Float32Array([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
  const x = new Float32Array([1, 3, 2, 0]);

  it('gpt-oss: top-k of the logits (+ bias), then softmax over the k selected', () => {
    const r = route(base, x, 1, 4, eye, new Float32Array([0, 0, 0, 2.5]));
    expect([...r.experts]).toEqual([1, 3]);
    const e = Math.exp(0.5);
    expect(r.weights[0]).toBeCloseTo(e / (e + 1), 6);
    expect(r.weights[1]).toBeCloseTo(1 / (e + 1), 6);
  });

  it('Qwen3-MoE: softmax over all experts, top-k, renormalized only with norm_topk_prob', () => {
    const q: MoeConfig = { ...base, kind: 'qwen3_moe', routing: 'softmax_topk', routerBias: false, activation: 'silu' };
    const z = Math.E + Math.E ** 3 + Math.E ** 2 + 1;
    const raw = route(q, x, 1, 4, eye);
    expect([...raw.experts]).toEqual([1, 2]);
    expect(raw.weights[0]).toBeCloseTo(Math.E ** 3 / z, 6);
    expect(raw.weights[1]).toBeCloseTo(Math.E ** 2 / z, 6);
    const norm = route({ ...q, normTopkProb: true }, x, 1, 4, eye);
    expect(norm.weights[0]).toBeCloseTo(Math.E / (Math.E + 1), 6);
    expect(norm.weights[0]! + norm.weights[1]!).toBeCloseTo(1, 6);
  });

  it('top-k breaks ties toward the lower index', () => {
    expect(topK([1, 2, 2, 0, 2], 2)).toEqual([1, 2]);
  });
});

describe('experts', () => {
  const m: MoeConfig = {
    kind: 'gpt_oss', numExperts: 1, topK: 1, expertIntermediateSize: 2, routing: 'topk_softmax', normTopkProb: false,
    routerBias: true, expertBias: true, activation: 'swiglu_clamped', swigluAlpha: 1.702, swigluLimit: 7, expertFormat: 'float', sparse: [true],
  };
  const sig = (v: number) => 1 / (1 + Math.exp(-v));

  it('gpt-oss: interleaved gate/up columns, gate clamped above, up clamped both sides, (up + 1) * gate * sigmoid(1.702 gate), biases', () => {
    // H = 1, I = 2: gate_up columns [g0, u0, g1, u1]; x = 1 so the pre-activations are the weights + biases
    const gateUp = new Float32Array([10, -9, -3, 0.5]);
    const gateUpBias = new Float32Array([0, 0, 0.5, 0]);
    const down = new Float32Array([1, 2]); // [I, H] = [[1], [2]]
    const out = expertForward(m, 0, new Float32Array([1]), 1, { gateUp, down, gateUpBias, downBias: new Float32Array([0.25]) });
    const h0 = (-7 + 1) * 7 * sig(1.702 * 7); // gate 10 -> 7, up -9 -> -7
    const h1 = (0.5 + 1) * -2.5 * sig(1.702 * -2.5); // gate -3 + 0.5 = -2.5 (no lower clamp)
    expect(out[0]).toBeCloseTo(h0 + 2 * h1 + 0.25, 5);
  });

  it('Qwen3-MoE: gate rows then up rows, silu(gate) * up, no biases', () => {
    const q: MoeConfig = { ...m, kind: 'qwen3_moe', routing: 'softmax_topk', activation: 'silu', expertBias: false, routerBias: false };
    // H = 1, I = 2: gate_up [2I, H] = [g0, g1, u0, u1]; down [H, I] = [d0, d1]
    const out = expertForward(q, 0, new Float32Array([2]), 1, { gateUp: new Float32Array([1, -0.5, 3, 4]), down: new Float32Array([0.5, -1]) });
    const silu = (v: number) => v * sig(v);
    expect(out[0]).toBeCloseTo(0.5 * silu(2) * 6 - silu(-1) * 8, 5);
  });
});

describe('gpt-oss reference', () => {
  it('the MXFP4 form and its dequantized float form give identical logits', async () => {
    const t = randomTensors(GPT_OSS_TINY, 11);
    const cfg = decoderConfigFromHF(GPT_OSS_TINY);
    const { numExperts: E, expertIntermediateSize: I } = cfg.moe!;
    const H = cfg.hiddenSize;
    const floatT: TensorToWrite[] = [];
    const mxT: TensorToWrite[] = [];
    for (const [name, { shape, x }] of t) {
      const m = /^(.*mlp\.experts\.)(gate_up_proj|down_proj)$/.exec(name);
      if (!m) {
        floatT.push(f32(name, shape, x));
        mxT.push(f32(name, shape, x));
        continue;
      }
      // parameter [E, in, out] -> stored [E, out, in/32, 16]; the float form holds exactly the dequantized values
      const [inn, out] = m[2] === 'gate_up_proj' ? [H, 2 * I] : [I, H];
      const q = quantizeMxfp4Hf(t3(x, E, inn, out));
      mxT.push(u8(name + '_blocks', [E, out, inn / 32, 16], q.blocks), u8(name + '_scales', [E, out, inn / 32], q.scales));
      floatT.push(f32(name, shape, t3(dequantizeMxfp4Hf(q.blocks, q.scales), E, out, inn)));
    }
    const a = await loadRef(writeModel(GPT_OSS_TINY, floatT));
    const b = await loadRef(writeModel({ ...GPT_OSS_TINY, quantization_config: { quant_method: 'mxfp4' } }, mxT));
    expect(b.cfg.moe!.expertFormat).toBe('mxfp4');
    const la = referenceForward(a.cfg, a.w, ids);
    const lb = referenceForward(b.cfg, b.w, ids);
    expect(maxAbs(la, lb)).toBe(0);
    let std = 0;
    for (const v of la) std += v * v;
    expect(Math.sqrt(std / la.length)).toBeGreaterThan(0.1); // not a degenerate model
    expect(referenceGreedy(a.cfg, a.w, ids.slice(0, 5), 3)).toEqual(referenceGreedy(b.cfg, b.w, ids.slice(0, 5), 3));
  });

  it('sliding layers see the window only; full layers see everything', async () => {
    const one = { ...GPT_OSS_TINY, num_hidden_layers: 1, layer_types: ['sliding_attention'] };
    const t = randomTensors(one, 5);
    const { cfg, w } = await loadRef(writeModel(one, [...t].map(([n, { shape, x }]) => f32(n, shape, x))));
    const V = cfg.vocabSize;
    const last = (x: Float32Array, T: number) => x.subarray((T - 1) * V, T * V);
    const other = [9, 9, 9, 9, ...ids.slice(4, 8)]; // differs in the 4 tokens before the window of position 7
    expect(maxAbs(last(referenceForward(cfg, w, ids.slice(0, 8)), 8), last(referenceForward(cfg, w, other), 8))).toBe(0);
    const full = { ...cfg, slidingWindow: [0] };
    expect(maxAbs(last(referenceForward(full, w, ids.slice(0, 8)), 8), last(referenceForward(full, w, other), 8))).toBeGreaterThan(1e-4);
  });

  it('attention sinks: a very low sink is no sink; a very high one leaves only the o_proj bias', async () => {
    const t = randomTensors(GPT_OSS_TINY, 23);
    const { cfg, w } = await loadRef(writeModel(GPT_OSS_TINY, [...t].map(([n, { shape, x }]) => f32(n, shape, x))));
    const sinksTo = (v: number, zeroV = false): WeightMap => (n) =>
      n.endsWith('self_attn.sinks') ? new Float32Array(cfg.numHeads).fill(v) : zeroV && /v_proj\.(weight|bias)$/.test(n) ? new Float32Array(w(n)!.length) : w(n);
    const noSinks = referenceForward({ ...cfg, attnSinks: false }, w, ids);
    expect(maxAbs(referenceForward(cfg, sinksTo(-1e4), ids), noSinks)).toBe(0);
    expect(maxAbs(referenceForward(cfg, sinksTo(0), ids), noSinks)).toBeGreaterThan(1e-4);
    expect(maxAbs(referenceForward(cfg, sinksTo(200), ids), referenceForward(cfg, sinksTo(0, true), ids))).toBeLessThan(1e-5);
  });
});

describe('Qwen3-MoE reference', () => {
  interface Golden {
    input_ids: number[];
    logits: number[][];
  }
  const dense = QWEN3_DENSE;

  it('identical experts with normalized top-k reproduce the dense model: transformers goldens of test/fixtures/hf/qwen3', async () => {
    const g: Golden = JSON.parse(readFileSync(`${dense}/golden.json`, 'utf8'));
    const { cfg, w } = await loadRef(await moeFromDense(false));
    expect(cfg.moe!.sparse).toEqual([true, false]);
    expect(w('model.layers.0.mlp.experts.gate_up_proj')!.length).toBe(4 * 2 * 128 * 64);
    const logits = referenceForward(cfg, w, g.input_ids);
    const V = cfg.vocabSize;
    for (let t = 0; t < g.input_ids.length; t++) {
      const row = logits.subarray(t * V, (t + 1) * V);
      let d = 0;
      let m = 0;
      for (let i = 0; i < V; i++) {
        d = Math.max(d, Math.abs(row[i]! - g.logits[t]![i]!));
        m = Math.max(m, Math.abs(g.logits[t]![i]!));
      }
      expect(d / m).toBeLessThan(1e-3);
    }
    const d = await loadRef(dense);
    expect(maxAbs(logits, referenceForward(d.cfg, d.w, g.input_ids))).toBeLessThan(1e-4);
  });

  it('per-expert and stacked checkpoints give identical logits', async () => {
    const a = await loadRef(await moeFromDense(false));
    const b = await loadRef(await moeFromDense(true));
    expect(maxAbs(referenceForward(a.cfg, a.w, ids), referenceForward(b.cfg, b.w, ids))).toBe(0);
  });

  it('distinct random experts: routing changes the output, norm_topk_prob matters', async () => {
    const t = randomTensors(QWEN3_MOE_TINY, 31);
    const dir = writeModel(QWEN3_MOE_TINY, [...t].map(([n, { shape, x }]) => f32(n, shape, x)));
    const { cfg, w } = await loadRef(dir);
    const a = referenceForward(cfg, w, ids);
    const b = referenceForward({ ...cfg, moe: { ...cfg.moe!, normTopkProb: false } }, w, ids);
    expect(maxAbs(a, b)).toBeGreaterThan(1e-3);
    expect(a.every(Number.isFinite)).toBe(true);
  });
});
