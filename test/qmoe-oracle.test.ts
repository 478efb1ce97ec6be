/**
 * The QMoE CPU reference (src/reference/qmoe.ts) against ONNX Runtime's CPU kernel for com.microsoft.QMoE,
 * on the shared case list (src/reference/qmoe-cases.ts).
 */
import { describe, expect, it } from 'vitest';
import { buildQmoeModel, runQmoeOrt } from '../src/onnx/qmoe.ts';
import { runOnnxModel } from '../src/onnx/ort.ts';
import { qmoeOrtScaleShapeIssue, qmoeReference, qmoeRoute, type QmoeAttrs } from '../src/reference/qmoe.ts';
import {
  makeQmoeInputs,
  QMOE_CASES,
  qmoeReferenceFromTensors,
  seededRandom,
  type QmoeCase,
  type QmoeTensors,
} from '../src/reference/qmoe-cases.ts';

const RTOL = 1e-4;

/** |got - want| <= RTOL * (|want| + 0.1 * max|want|): relative, with a floor for near-zero elements. */
function expectClose(got: Float32Array, want: Float32Array, what: string): void {
  expect(got.length, `${what}: length`).toBe(want.length);
  let scale = 0;
  for (const v of want) scale = Math.max(scale, Math.abs(v));
  expect(scale, `${what}: reference is all zero`).toBeGreaterThan(0);
  let worst = 0;
  let worstAt = -1;
  for (let i = 0; i < want.length; i++) {
    const g = got[i]!;
    const w = want[i]!;
    const r = Math.abs(g - w) / (Math.abs(w) + 0.1 * scale);
    if (!(r <= worst)) {
      worst = Number.isNaN(r) ? Infinity : r;
      worstAt = i;
    }
  }
  expect(worst, `${what}: worst relative error at ${worstAt}: got ${got[worstAt]}, want ${want[worstAt]}`).toBeLessThanOrEqual(RTOL);
}

function maxRelDiff(a: Float32Array, b: Float32Array): number {
  let scale = 0;
  let err = 0;
  for (let i = 0; i < a.length; i++) {
    scale = Math.max(scale, Math.abs(b[i]!));
    err = Math.max(err, Math.abs(a[i]! - b[i]!));
  }
  return err / scale;
}

function refArgs(t: QmoeTensors) {
  return {
    input: t.inputT.data,
    router: t.routerT.data,
    fc1: t.fc1T.data,
    fc1Scales: t.fc1ScalesT.data,
    fc2: t.fc2T.data,
    fc2Scales: t.fc2ScalesT.data,
    ...(t.fc1BiasT ? { fc1Bias: t.fc1BiasT.data } : {}),
    ...(t.fc2BiasT ? { fc2Bias: t.fc2BiasT.data } : {}),
    shapes: {
      input: t.inputT.shape,
      router: t.routerT.shape,
      fc1: t.fc1T.shape,
      fc1Scales: t.fc1ScalesT.shape,
      fc2: t.fc2T.shape,
      fc2Scales: t.fc2ScalesT.shape,
    },
  };
}

const SEED = 20240611;
const caseByName = (name: string): QmoeCase => {
  const c = QMOE_CASES.find((x) => x.name === name);
  if (!c) throw new Error(`no case ${name}`);
  return c;
};

describe('QMoE case list', () => {
  it('covers the required configurations', () => {
    expect(QMOE_CASES.length).toBeGreaterThanOrEqual(12);
    const has = (p: (c: QmoeCase) => boolean) => QMOE_CASES.some(p);
    for (const k of [1, 2, 4]) expect(has((c) => c.k === k), `k=${k}`).toBe(true);
    for (const bits of [4, 8] as const) expect(has((c) => c.bits === bits), `bits=${bits}`).toBe(true);
    for (const block of [0, 16, 32, 64]) expect(has((c) => c.block === block), `block=${block}`).toBe(true);
    expect(has((c) => c.activation === 'relu')).toBe(true);
    expect(has((c) => c.activation === 'swiglu' && c.limit === null)).toBe(true);
    expect(has((c) => c.activation === 'swiglu' && c.limit !== null)).toBe(true);
    expect(has((c) => c.tokens === 1)).toBe(true);
    expect(has((c) => c.tokens >= 64)).toBe(true);
    expect(has((c) => c.biases)).toBe(true);
    expect(has((c) => !c.biases)).toBe(true);
    expect(new Set(QMOE_CASES.map((c) => c.name)).size).toBe(QMOE_CASES.length);
  });

  it('makeQmoeInputs is deterministic and produces contract-shaped tensors', () => {
    const c = caseByName('k4-b4-blk32-swiglu-limit-t64-bias');
    const a = makeQmoeInputs(c, 7);
    const b = makeQmoeInputs(c, 7);
    const d = makeQmoeInputs(c, 8);
    expect(a.tensors.fc1T.data).toEqual(b.tensors.fc1T.data);
    expect(a.tensors.inputT.data).toEqual(b.tensors.inputT.data);
    expect(a.tensors.fc1T.data).not.toEqual(d.tensors.fc1T.data);
    const t = a.tensors;
    expect(t.inputT.shape).toEqual([64, 128]);
    expect(t.routerT.shape).toEqual([64, 8]);
    expect(t.fc1T.shape).toEqual([8, 128, 64]); // [E, 2 * inter, hidden / 2]
    expect(t.fc1ScalesT.shape).toEqual([8, 128, 4]); // [E, 2 * inter, hidden / 32]
    expect(t.fc2T.shape).toEqual([8, 128, 32]); // [E, hidden, inter / 2]
    expect(t.fc2ScalesT.shape).toEqual([8, 128, 2]);
    expect(t.fc1BiasT?.shape).toEqual([8, 128]);
    expect(t.fc2BiasT?.shape).toEqual([8, 128]);
    expect(a.attrs).toEqual({
      k: 4,
      activation_type: 'swiglu',
      expert_weight_bits: 4,
      swiglu_fusion: 1,
      normalize_routing_weights: 0,
      block_size: 32,
      activation_alpha: 1,
      activation_beta: 0,
      swiglu_limit: 2.5,
    });
  });
});

describe('QMoE reference vs ONNX Runtime CPU', () => {
  for (const c of QMOE_CASES) {
    it(c.name, async () => {
      const { tensors, attrs } = makeQmoeInputs(c, SEED);
      const ref = qmoeReferenceFromTensors(tensors, attrs);
      expect(ref.shape).toEqual(tensors.inputT.shape);
      const ort = await runQmoeOrt(tensors, attrs);
      expectClose(ort, ref.output, c.name);
    });
  }

  // Extra coverage beyond the named cases: random configurations drawn from a seeded generator.
  it('random configurations', async () => {
    const rand = seededRandom(SEED + 100);
    const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    for (let i = 0; i < 12; i++) {
      const block = pick([0, 16, 32, 64]);
      const unit = Math.max(block, 16);
      const E = pick([2, 3, 5, 8]);
      const c: QmoeCase = {
        name: `random-${i}`,
        E,
        k: 1 + Math.floor(rand() * Math.min(E, 4)),
        hidden: unit * pick([1, 2, 3]),
        inter: unit * pick([1, 2]),
        bits: pick([4, 8] as const),
        block,
        activation: pick(['relu', 'swiglu'] as const),
        limit: pick([null, 1.5, 4]),
        tokens: pick([1, 2, 7, 33, 65]),
        biases: rand() < 0.5,
        alpha: pick([1, 1.702]),
        beta: pick([0, 1]),
      };
      const { tensors, attrs } = makeQmoeInputs(c, SEED + i);
      const ref = qmoeReferenceFromTensors(tensors, attrs).output;
      const issue = qmoeOrtScaleShapeIssue(refArgs(tensors).shapes, attrs);
      if (issue) {
        // e.g. hidden == block_size < inter: valid for the contract and the reference, rejected by ORT's check.
        await expect(runQmoeOrt(tensors, attrs), JSON.stringify(c)).rejects.toThrow(/fc2_experts_scales' is expected to have shape/);
        continue;
      }
      expectClose(await runQmoeOrt(tensors, attrs), ref, JSON.stringify(c));
    }
  });

  // Constant weights go through ORT's PrePack path (unpacked/transposed weights) instead of per-call dequantisation.
  for (const name of ['k4-b4-blk32-swiglu-limit-t64-bias', 'k2-b8-row-relu-t64-bias', 'k2-b4-blk64-swiglu-gptoss-t64-bias']) {
    it(`${name} with weights as initializers`, async () => {
      const { tensors, attrs } = makeQmoeInputs(caseByName(name), SEED + 1);
      const ref = qmoeReferenceFromTensors(tensors, attrs);
      const ort = await runQmoeOrt(tensors, attrs, {
        initializers: ['fc1T', 'fc1ScalesT', 'fc2T', 'fc2ScalesT', 'fc1BiasT', 'fc2BiasT'],
      });
      expectClose(ort, ref.output, name);
    });
  }

  it('swiglu_limit cases really clamp (the limit changes the output)', () => {
    for (const c of QMOE_CASES.filter((x) => x.activation === 'swiglu' && x.limit !== null)) {
      const { tensors, attrs } = makeQmoeInputs(c, SEED);
      const { swiglu_limit: _limit, ...unclamped } = attrs;
      const diff = maxRelDiff(qmoeReferenceFromTensors(tensors, unclamped).output, qmoeReferenceFromTensors(tensors, attrs).output);
      expect(diff, c.name).toBeGreaterThan(1e-3);
    }
  });

  it('breaks top-k ties toward the higher expert index, like ORT', async () => {
    const c = { ...caseByName('k4of4-b8-row-relu-t1'), k: 2 };
    const { tensors, attrs } = makeQmoeInputs(c, SEED);
    const cases: [number[], number, number[]][] = [
      [[0, 0, 0, 0], 1, [3]],
      [[0, 0, 0, 0], 2, [3, 2]],
      [[1, 1, 0, 0], 1, [1]],
      [[1, 1, 0, 0], 3, [1, 0, 3]],
      [[2, 0, 2, 0], 2, [2, 0]],
    ];
    for (const [logits, k, want] of cases) {
      const t = { ...tensors, routerT: { ...tensors.routerT, data: new Float32Array(logits) } };
      const a = { ...attrs, k };
      const ref = qmoeReferenceFromTensors(t, a);
      expect([...ref.routeExpert], `${logits} k=${k}`).toEqual(want);
      expectClose(await runQmoeOrt(t, a), ref.output, `ties ${logits} k=${k}`);
    }
    // The tie-break is observable: the lowest-index choice gives a different output.
    const t0 = { ...tensors, routerT: { ...tensors.routerT, data: new Float32Array([0, 0, 0, 0]) } };
    const hi = qmoeReferenceFromTensors(t0, { ...attrs, k: 1 }).output;
    const lo = qmoeReferenceFromTensors({ ...t0, routerT: { ...t0.routerT, data: new Float32Array([1, 0, 0, 0]) } }, { ...attrs, k: 1 }).output;
    expect(maxRelDiff(hi, lo)).toBeGreaterThan(1e-2);
  });

  it('mixes with a softmax over the k selected logits (not over all experts)', async () => {
    const c = caseByName('k2-b8-row-relu-t64-bias');
    const { tensors, attrs } = makeQmoeInputs(c, SEED + 2);
    const ort = await runQmoeOrt(tensors, attrs);
    // Alternative semantics: softmax over all experts, then take the top-k probabilities without renormalising.
    const E = c.E;
    const probs = new Float32Array(tensors.routerT.data.length);
    for (let t = 0; t < c.tokens; t++) {
      const row = tensors.routerT.data.subarray(t * E, (t + 1) * E);
      const m = Math.max(...row);
      const ex = [...row].map((v) => Math.exp(v - m));
      const s = ex.reduce((x, y) => x + y, 0);
      ex.forEach((v, i) => (probs[t * E + i] = v / s));
    }
    const alt = qmoeReference({ ...refArgs(tensors), routerWeights: probs, attrs: { ...attrs, normalize_routing_weights: 0 } }).output;
    expect(maxRelDiff(ort, alt)).toBeGreaterThan(1e-2);
    expectClose(ort, qmoeReferenceFromTensors(tensors, attrs).output, 'softmax over top-k');
  });

  it('ignores normalize_routing_weights without router_weights', async () => {
    const c = caseByName('k2-b4-blk16-swiglu-t1');
    const { tensors, attrs } = makeQmoeInputs({ ...c, tokens: 8 }, SEED + 3);
    const a0 = await runQmoeOrt(tensors, { ...attrs, normalize_routing_weights: 0 });
    const a1 = await runQmoeOrt(tensors, { ...attrs, normalize_routing_weights: 1 });
    expect(a1).toEqual(a0);
    expectClose(a1, qmoeReferenceFromTensors(tensors, { ...attrs, normalize_routing_weights: 1 }).output, 'normalize=1');
  });

  it('uses router_weights (ORT input 14) for mixing, normalised when asked', async () => {
    const c = caseByName('k4-b4-blk32-swiglu-limit-t64-bias');
    const { tensors, attrs } = makeQmoeInputs(c, SEED + 4);
    const rand = seededRandom(SEED + 5);
    const rw = Float32Array.from({ length: tensors.routerT.data.length }, () => rand());
    for (const normalize of [0, 1]) {
      const a: QmoeAttrs = { ...attrs, normalize_routing_weights: normalize };
      const ref = qmoeReference({ ...refArgs(tensors), routerWeights: rw, attrs: a });
      expectClose(await runQmoeOrt(tensors, a, { routerWeights: rw }), ref.output, `router_weights normalize=${normalize}`);
    }
  });

  it('defaults activation_alpha = 1 and activation_beta = 0 when absent (CPU kernel)', async () => {
    const { tensors, attrs } = makeQmoeInputs(caseByName('k2-b4-blk16-swiglu-t1'), SEED + 6);
    const { activation_alpha: _a, activation_beta: _b, ...bare } = attrs;
    const ort = await runQmoeOrt(tensors, bare);
    expectClose(ort, qmoeReferenceFromTensors(tensors, { ...bare, activation_alpha: 1, activation_beta: 0 }).output, 'defaults');
    expectClose(ort, qmoeReferenceFromTensors(tensors, bare).output, 'defaults (reference defaults)');
  });

  it('ORT rejects swiglu without interleaved fusion (swiglu_fusion = 0)', async () => {
    const { tensors, attrs } = makeQmoeInputs(caseByName('k2-b4-blk16-swiglu-t1'), SEED);
    await expect(runQmoeOrt(tensors, { ...attrs, swiglu_fusion: 0 })).rejects.toThrow(/swiglu_fusion=1/);
    expect(() => qmoeReferenceFromTensors(tensors, { ...attrs, swiglu_fusion: 0 })).toThrow(/swiglu_fusion = 1/);
  });

  describe('scale layouts ORT accepts besides the contract ones', () => {
    const base: QmoeCase = { name: 'layout', E: 3, k: 2, hidden: 32, inter: 64, bits: 4, block: 0, activation: 'relu', limit: null, tokens: 5, biases: true };
    const run = async (c: QmoeCase, edit: (t: QmoeTensors, a: QmoeAttrs) => void) => {
      const { tensors, attrs } = makeQmoeInputs(c, SEED + 7);
      edit(tensors, attrs);
      expect(qmoeOrtScaleShapeIssue(refArgs(tensors).shapes, attrs)).toBeNull();
      expectClose(await runQmoeOrt(tensors, attrs), qmoeReferenceFromTensors(tensors, attrs).output, c.name);
    };
    it('block_size set but per-row [E, rows] scales: per-row quantisation', () => run(base, (_t, a) => void (a.block_size = 32)));
    it('per-row scales as [E, rows, 1]', () =>
      run(base, (t) => {
        t.fc1ScalesT.shape = [...t.fc1ScalesT.shape, 1];
        t.fc2ScalesT.shape = [...t.fc2ScalesT.shape, 1];
      }));
    it('hidden == block_size: fc1 has one block, so fc2 must be per-row too', () =>
      run({ ...base, block: 32 }, (t) => {
        t.fc2ScalesT = { dtype: 'float32', shape: [3, 32, 1], data: t.fc2ScalesT.data.slice(0, 3 * 32) };
      }));
    it('hidden == block_size < inter with block-wise fc2 (contract-valid): ORT rejects, the reference computes', async () => {
      const { tensors, attrs } = makeQmoeInputs({ ...base, block: 32 }, SEED + 8);
      expect(tensors.fc2ScalesT.shape).toEqual([3, 32, 2]);
      expect(qmoeOrtScaleShapeIssue(refArgs(tensors).shapes, attrs)).toMatch(/fc2_scales must be \[3, 32\] or \[3, 32, 1\]/);
      await expect(runQmoeOrt(tensors, attrs)).rejects.toThrow(/'fc2_experts_scales' is expected to have shape \{3,32,1\}, got \{3,32,2\}/);
      // Block-wise fc2 really is used: equal to dequantising with the per-block scales by hand.
      const y = qmoeReferenceFromTensors(tensors, attrs).output;
      const perRow = { ...tensors, fc2ScalesT: { dtype: 'float32' as const, shape: [3, 32], data: tensors.fc2ScalesT.data.filter((_, i) => i % 2 === 0) } };
      expect(maxRelDiff(qmoeReferenceFromTensors(perRow, attrs).output, y)).toBeGreaterThan(1e-3);
    });
  });

  it('the single-node model has the node inputs in ORT positions', async () => {
    const { tensors, attrs } = makeQmoeInputs(caseByName('k1-b4-row-relu-t1'), SEED);
    const { model, feeds } = buildQmoeModel(tensors, attrs);
    // No biases: fc1_experts_bias (position 4) is left empty between fc1_scales and fc2_experts_weights.
    expect(Object.keys(feeds).sort()).toEqual(['fc1_experts_weights', 'fc1_scales', 'fc2_experts_weights', 'fc2_scales', 'input', 'router_probs']);
    const out = await runOnnxModel(model, feeds);
    expect(out['output']?.shape).toEqual([1, 64]);
  });
});

describe('QMoE reference', () => {
  it('names the tensor and the expected shape on bad input', () => {
    const { tensors, attrs } = makeQmoeInputs(caseByName('k2-b4-blk64-relu-t1-bias'), SEED);
    const args = refArgs(tensors);
    expect(() => qmoeReference({ ...args, shapes: { ...args.shapes, fc1Scales: [4, 64, 3] }, attrs })).toThrow(
      /fc1_scales has shape \[4, 64, 3\], expected \[4, 64, 2\] \(block_size 64\) or per-row \[4, 64\]/,
    );
    expect(() => qmoeReference({ ...args, shapes: { ...args.shapes, fc1Scales: [4, 64], fc2Scales: [4, 128, 2] }, attrs: { ...attrs, block_size: 0 } })).toThrow(
      /fc2_scales has shape \[4, 128, 2\], expected \[4, 128\] or \[4, 128, 1\]/,
    );
    expect(() => qmoeReference({ ...args, shapes: { ...args.shapes, router: [2, 4] }, attrs })).toThrow(/router_probs has shape \[2, 4\], expected \[1, 4\]/);
    expect(() => qmoeReference({ ...args, attrs: { ...attrs, k: 5 } })).toThrow(/attribute k must be in \[1, 4\]/);
    expect(() => qmoeReference({ ...args, attrs: { ...attrs, block_size: 24 } })).toThrow(/block_size must be a power of 2/);
    expect(() => qmoeReference({ ...args, fc1Bias: new Float32Array(3), attrs })).toThrow(/fc1_experts_bias has 3 elements/);
    expect(() => qmoeReference({ ...args, attrs: { ...attrs, swiglu_limit: -1 } })).toThrow(/swiglu_limit must be >= 0, got -1/);
  });

  it('routes like ORT for a hand-made row', () => {
    const r = qmoeRoute([0.5, 2, 2, -1], 2);
    expect(r.experts).toEqual([2, 1]);
    expect(r.weights[0]).toBeCloseTo(0.5, 12);
    expect(r.weights[1]).toBeCloseTo(0.5, 12);
    const s = qmoeRoute([0, Math.log(3), -5], 2);
    expect(s.experts).toEqual([1, 0]);
    expect(s.weights[0]).toBeCloseTo(0.75, 12);
  });

  it('dequantises 4-bit low nibble first with midpoint 8, 8-bit with midpoint 128', () => {
    // One expert, one output row: hidden 4, inter 2 (relu), x = e0..e3 picks columns.
    const attrs4: QmoeAttrs = { k: 1, activation_type: 'relu', expert_weight_bits: 4 };
    const fc2 = new Uint8Array([0x98, 0x98, 0x98, 0x98]); // W2 = [[0, 1], ...] after dequant ((8-8), (9-8))
    for (let col = 0; col < 4; col++) {
      const x = new Float32Array(4);
      x[col] = 1;
      const out = qmoeReference({
        input: x,
        router: new Float32Array([0]),
        // W1 rows: row0 = [q0..q3] = nibbles of 0x21, 0x43 → 1,2,3,4; row1 all 8 (zero)
        fc1: new Uint8Array([0x21, 0x43, 0x88, 0x88]),
        fc1Scales: new Float32Array([10, 1]),
        fc2,
        fc2Scales: new Float32Array([1, 1, 1, 1]),
        shapes: { input: [1, 4], router: [1, 1], fc1: [1, 2, 2], fc1Scales: [1, 2], fc2: [1, 4, 1], fc2Scales: [1, 4] },
        attrs: attrs4,
      }).output;
      // h0 = 10 * (q[col] - 8) = 10 * (col + 1 - 8) < 0 → relu 0; h1 = 0 → output 0. Use negated x instead.
      expect([...out]).toEqual([0, 0, 0, 0]);
      x[col] = -1;
      const neg = qmoeReference({
        input: x,
        router: new Float32Array([0]),
        fc1: new Uint8Array([0x21, 0x43, 0x88, 0x88]),
        fc1Scales: new Float32Array([10, 1]),
        fc2: new Uint8Array([0x89, 0x89, 0x89, 0x89]), // W2 rows = [1, 0]: output = h0
        fc2Scales: new Float32Array([1, 1, 1, 1]),
        shapes: { input: [1, 4], router: [1, 1], fc1: [1, 2, 2], fc1Scales: [1, 2], fc2: [1, 4, 1], fc2Scales: [1, 4] },
        attrs: attrs4,
      }).output;
      expect(neg[0]).toBeCloseTo(-10 * (col + 1 - 8), 5);
    }
    const out8 = qmoeReference({
      input: new Float32Array([1, 1]),
      router: new Float32Array([0]),
      fc1: new Uint8Array([130, 129]),
      fc1Scales: new Float32Array([0.5]),
      fc2: new Uint8Array([129, 127]),
      fc2Scales: new Float32Array([2, 3]),
      shapes: { input: [1, 2], router: [1, 1], fc1: [1, 1, 2], fc1Scales: [1, 1], fc2: [1, 2, 1], fc2Scales: [1, 2] },
      attrs: { k: 1, activation_type: 'relu', expert_weight_bits: 8 },
    }).output;
    // h = 0.5 * (2 + 1) = 1.5; y = [2 * 1 * 1.5, 3 * -1 * 1.5]
    expect([...out8]).toEqual([3, -4.5]);
  });
});
