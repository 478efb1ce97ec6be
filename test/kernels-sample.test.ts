/**
 * sample kernels vs the CPU reference (src/reference/sample.ts): exact argmax (ties), exact tokens for given seeds,
 * reproducibility, top-k / top-p sets, and a chi-square test of the sampled frequencies. Selection chains several
 * dispatches and its output is a token id, which the op-test harness (one dispatch, float outputs) does not model, so
 * these tests launch the sample contract's paths themselves (greedy, top_k and single_pass; the top-k path at
 * temperature 0 through its test-only variant), with their own output buffers and guard words. They use a device of
 * their own without timestamps: with timestamps every dispatch gets its own pass and two queries, and a chi-square
 * run records thousands of dispatches in one submit.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Plan } from '../src/contracts/index.ts';
import { readUint32, uploadBuffer } from '../src/gpu/buffers.ts';
import { createDevice, type TesseraDevice } from '../src/gpu/device.ts';
import { Recorder } from '../src/gpu/recorder.ts';
import { defaultRegistry, wgslPath } from '../src/node/registry.ts';
import type { Registry } from '../src/registry/types.ts';
import { argmaxRef, sampleRef, TOPK_PATH_KMAX, type SampleUniforms } from '../src/reference/sample.ts';
import { planOp, recordPlan, runPlan } from '../src/selftest/launch.ts';
import { registryWithSources } from './helpers/emulate-f16.ts';

const reg = defaultRegistry();
let dev: TesseraDevice;
const NAMES = ['argmax', 'argmax_reduce', 'find_topk_phase1', 'find_topk_phase2', 'softmax_and_sample', 'single_pass'] as const;

beforeAll(async () => {
  dev = await createDevice();
});
afterAll(() => dev?.destroy());

// Output layout of sample.wgsl: 4 header words, KMAX final (value, id) pairs, then the phase-1 partials.
const PART = 4 + 2 * TOPK_PATH_KMAX;
const GUARD = 64;
const SENTINEL = 0xdeadbeef;

type Path = 'argmax' | 'argmax_counted' | 'argmax_one' | 'single_pass' | 'topk_path' | 'topk_serial';
/** The state word the counted greedy path writes its NaN/Inf count into (the decode loop's). */
const WORD = 3;

/**
 * The plan of one selection path: the sample contract's greedy, top_k (at temperature 0: its test-only variant
 * top_k_any_temperature) or single_pass variant.
 */
function samplePlan(path: Path, u: SampleUniforms, contract = 'sample', registry?: Registry): Plan {
  const variant = { argmax: 'greedy', argmax_counted: 'greedy_counted', argmax_one: 'greedy_one', single_pass: 'single_pass', topk_path: u.temperature > 0 ? 'top_k' : 'top_k_any_temperature', topk_serial: 'serial' }[path];
  return planOp(dev, contract, {
    shapes: { logits: [u.vocab_size] },
    attributes: { temperature: u.temperature, top_k: u.top_k, top_p: u.top_p, seed: u.random_seed, ...(path === 'argmax_counted' || path === 'argmax_one' ? { nonfinite_word: WORD } : {}) },
    // the CPU adapters' top-k path, on any device; the one-workgroup greedy pass (off by default), on any device
    ...(path === 'topk_serial' ? { tunables: { cpuMapping: 'on' } } : path === 'argmax_one' ? { tunables: { cpuMapping: 'off', argmaxOne: 'on' } } : {}),
    variant,
    ...(registry ? { registry } : {}),
  });
}

/** Words a path writes with n phase-1 workgroups: 4 header words, KMAX (value, id) pairs, then 2 words per partial
 * (and one count each on the counted path). */
function outputWords(path: Path, n: number): number {
  if (path === 'argmax') return PART + 2 * n;
  if (path === 'argmax_counted') return PART + 3 * n;
  if (path === 'topk_path') return PART + 2 * TOPK_PATH_KMAX * n;
  return 4; // single_pass, topk_serial, argmax_one: the header words alone
}

/** Phase-1 workgroups of a plan (its first pass's dispatch width). */
const phase1 = (plan: Plan) => plan.passes[0]!.dispatch[0];

/** Select one token; `n` replaces the contract's phase-1 dispatch width (any width must work). */
async function select(path: Path, logits: Float32Array, u: SampleUniforms, n?: number): Promise<number> {
  return (await selectState(path, logits, u, n))[0]!;
}

/** The state's header words (0: the token, 3: the counted path's NaN/Inf count) after one selection. */
async function selectState(path: Path, logits: Float32Array, u: SampleUniforms, n?: number): Promise<Uint32Array> {
  const plan = samplePlan(path, u);
  const words = outputWords(path, n ?? phase1(plan));
  const lb = uploadBuffer(dev.device, logits, 'logits');
  const ob = uploadBuffer(dev.device, new Uint32Array(words + GUARD).fill(SENTINEL), 'output');
  await runPlan(dev, plan, { logits: lb, state: ob }, n === undefined ? {} : { dispatch: { [plan.passes[0]!.id]: [n, 1, 1] } });
  const all = await readUint32(dev.device, ob, words + GUARD);
  lb.destroy();
  ob.destroy();
  expect(all.subarray(words).every((w) => w === SENTINEL), `${path}: wrote past its ${words} output words`).toBe(true);
  return all.slice(0, 4);
}

/** Tokens for many seeds in one submit (the top-k path's first two phases run once). */
async function drawMany(path: 'single_pass' | 'topk_path' | 'topk_serial', logits: Float32Array, u: SampleUniforms, seeds: number[]): Promise<Uint32Array> {
  const plan = samplePlan(path, { ...u, random_seed: seeds[0]! });
  const lb = uploadBuffer(dev.device, logits, 'logits');
  const ob = uploadBuffer(dev.device, new Uint32Array(outputWords(path, phase1(plan))), 'output');
  const res = dev.buffers.acquire(seeds.length * 4, undefined, 'tokens');
  const rec = new Recorder(dev);
  const last = plan.passes.at(-1)!.id;
  for (const [i, s] of seeds.entries()) {
    // the seed is a dynamic attribute: one plan, the seed re-written per recording; after the first draw only the
    // last pass of the top-k path runs again (it must leave the candidates of the earlier passes intact)
    await recordPlan(rec, dev, plan, { logits: lb, state: ob }, { dynamic: { seed: s }, ...(i > 0 ? { passes: (id) => id === last } : {}) });
    rec.copy(ob, 0, res, 4 * i, 4);
  }
  await rec.submit();
  const out = await readUint32(dev.device, res, seeds.length);
  lb.destroy();
  ob.destroy();
  dev.buffers.release(res);
  return out;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function randomLogits(V: number, seed: number, amp = 4): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: V }, () => (r() * 2 - 1) * amp);
}

/** Compilation errors of a WGSL module (type checking of every function; no pipeline is built). */
async function wgslErrors(code: string): Promise<string[]> {
  dev.device.pushErrorScope('validation');
  const m = dev.device.createShaderModule({ code, label: 'compile-check' });
  const info = await m.getCompilationInfo();
  const err = await dev.device.popErrorScope();
  return [...info.messages.filter((x) => x.type === 'error').map((x) => `${x.lineNum}:${x.linePos} ${x.message}`), ...(err ? [err.message] : [])];
}

const U = (p: Partial<SampleUniforms> & { vocab_size: number }): SampleUniforms => ({ temperature: 1, top_k: 0, top_p: 1, random_seed: 0, ...p });

describe('greedy argmax', () => {
  for (const V of [1, 255, 2048, 50000]) {
    it(`vocab ${V}: exact, ties to the lowest index, on every path`, async () => {
      const logits = randomLogits(V, V);
      // plant a tied maximum at three places (the later ones must lose)
      const top = 9;
      for (const i of [Math.floor(V * 0.7), Math.floor(V / 3), V - 1]) logits[i] = top;
      const want = argmaxRef(logits);
      expect(want).toBe(Math.min(Math.floor(V * 0.7), Math.floor(V / 3), V - 1));
      const u = U({ vocab_size: V, temperature: 0 });
      expect(await select('argmax', logits, u)).toBe(want);
      expect(await select('argmax_counted', logits, u)).toBe(want);
      expect(await select('single_pass', logits, u)).toBe(want);
      expect(await select('topk_path', logits, { ...u, top_k: 5 })).toBe(want);
      expect(await select('topk_serial', logits, u)).toBe(want);
      expect(await select('topk_serial', logits, { ...u, top_k: 5 })).toBe(want);
      // the one-workgroup pass reads the row as vec4: vocabs that are a multiple of 4
      if (V % 4 === 0) expect(await select('argmax_one', logits, u)).toBe(want);
      if (V > 1) {
        // any phase-1 dispatch size works
        expect(await select('argmax', logits, u, 1)).toBe(want);
        expect(await select('argmax', logits, u, 7)).toBe(want);
        expect(await select('argmax_counted', logits, u, 1)).toBe(want);
        expect(await select('argmax_counted', logits, u, 7)).toBe(want);
      }
    });
  }

  it('handles -inf logits and an all-equal row', async () => {
    const l = new Float32Array(300).fill(-Infinity);
    l[123] = -1e30;
    expect(await select('argmax', l, U({ vocab_size: 300, temperature: 0 }))).toBe(123);
    expect(await select('argmax_counted', l, U({ vocab_size: 300, temperature: 0 }))).toBe(123);
    expect(await select('single_pass', new Float32Array(300).fill(2), U({ vocab_size: 300, temperature: 0 }))).toBe(0);
    expect(await select('argmax_counted', new Float32Array(300).fill(2), U({ vocab_size: 300, temperature: 0 }))).toBe(0);
    expect(await select('argmax_one', l, U({ vocab_size: 300, temperature: 0 }))).toBe(123);
    expect(await select('argmax_one', new Float32Array(300).fill(2), U({ vocab_size: 300, temperature: 0 }))).toBe(0);
    expect(await select('topk_serial', l, U({ vocab_size: 300, temperature: 0 }))).toBe(123);
    expect(await select('topk_serial', new Float32Array(300).fill(2), U({ vocab_size: 300, temperature: 0 }))).toBe(0);
  });
});

describe('greedy argmax with the NaN/Inf count (greedy_counted)', () => {
  it.each([1, 300, 4097, 70000])('vocab %i: the count of NaN/Inf logits into word 3, the other header words as the greedy path leaves them', async (V) => {
    const logits = randomLogits(V, 7 * V);
    const at = [0, V - 1, Math.floor(V / 3), Math.floor((2 * V) / 3) + 1].filter((i, j, a) => i < V && a.indexOf(i) === j);
    const specials = [NaN, -Infinity, NaN, -Infinity];
    at.forEach((i, j) => (logits[i] = specials[j]!));
    const want = at.length;
    for (const n of [undefined, 1, 7]) {
      const got = await selectState('argmax_counted', logits, U({ vocab_size: V, temperature: 0 }), n);
      expect(got[WORD], `count, ${n ?? 'default'} partials`).toBe(want);
      expect(got[2], 'word 2 untouched').toBe(SENTINEL);
    }
    // all finite: the word is rewritten to 0 (no reset needed between steps); +Inf wins, the lowest index of two
    const finite = randomLogits(V, 11 * V);
    const inf = [Math.floor(V / 2), Math.floor(V / 4)].filter((i) => i < V);
    for (const i of inf) finite[i] = Infinity;
    const got = await selectState('argmax_counted', finite, U({ vocab_size: V, temperature: 0 }));
    expect(got[0]).toBe(Math.min(...inf));
    expect(got[WORD]).toBe(new Set(inf).size);
    const clean = await selectState('argmax_counted', randomLogits(V, 13 * V), U({ vocab_size: V, temperature: 0 }));
    expect(clean[WORD]).toBe(0);
    if (V % 4 === 0) {
      // the one-workgroup pass (greedy_one): the same id and count; it writes the header words 0 and 3 alone
      const one = await selectState('argmax_one', logits, U({ vocab_size: V, temperature: 0 }));
      expect([one[0], one[WORD], one[1], one[2]]).toEqual([(await selectState('argmax_counted', logits, U({ vocab_size: V, temperature: 0 })))[0], want, SENTINEL, SENTINEL]);
      expect((await selectState('argmax_one', finite, U({ vocab_size: V, temperature: 0 })))[0]).toBe(Math.min(...inf));
    }
  });

  it('the one-workgroup pass (greedy_one) only where asked (tunable argmaxOne), for vocabs of a multiple of 4 on GPU mappings', () => {
    const plan = (vocab: number, tunables: Record<string, string>) =>
      planOp(dev, 'sample', { shapes: { logits: [vocab] }, attributes: { temperature: 0, nonfinite_word: 3 }, tunables });
    const p = plan(50000, { cpuMapping: 'off', argmaxOne: 'on' });
    expect([p.variant, p.passes.length, p.passes[0]!.dispatch[0], p.derived.countsNonfinite]).toEqual(['greedy_one', 1, 1, true]);
    expect(p.derived.workgroupSize).toBe(dev.caps.limits.maxComputeInvocationsPerWorkgroup! >= 1024 ? 1024 : 256);
    expect(plan(50000, { cpuMapping: 'off' }).variant).toBe('greedy_counted');
    expect(plan(50001, { cpuMapping: 'off', argmaxOne: 'on' }).variant).toBe('greedy_counted');
    expect(plan(50000, { cpuMapping: 'on', argmaxOne: 'on' }).variant).toBe('serial');
  });

  it('the contract counts only where it can (greedy, a header word, the tunable on) and says so', () => {
    const plan = (attributes: Record<string, number>, tunables: Record<string, string> = {}) =>
      planOp(dev, 'sample', { shapes: { logits: [50000] }, attributes: { temperature: 0, ...attributes }, tunables });
    const p = plan({ nonfinite_word: 3 }, { cpuMapping: 'off' });
    expect([p.variant, p.derived.countsNonfinite]).toEqual(['greedy_counted', true]);
    expect(p.passes.map((x) => x.dispatch[0])).toEqual([phase1(plan({}, { cpuMapping: 'off' })), 1]);
    for (const [a, t] of [[{}, {}], [{ nonfinite_word: 3, temperature: 0.7 }, {}], [{ nonfinite_word: 1 }, {}], [{ nonfinite_word: 3 }, { argmaxCount: 'off' }]] as const) {
      const q = plan(a, t);
      expect(q.variant, JSON.stringify([a, t])).not.toBe('greedy_counted');
      expect(q.derived.countsNonfinite).toBe(false);
    }
    // sampling: the CPU adapters' top-k path counts; the registry paths do not
    const sampled = { nonfinite_word: 3, temperature: 0.7, top_k: 40 };
    const serial = plan(sampled, { cpuMapping: 'on' });
    expect([serial.variant, serial.derived.countsNonfinite]).toEqual(['serial', true]);
    // and greedy decoding on a CPU adapter: the serial path too (no barriers), counting
    const greedyCpu = plan({ nonfinite_word: 3 }, { cpuMapping: 'on' });
    expect([greedyCpu.variant, greedyCpu.derived.countsNonfinite]).toEqual(['serial', true]);
    for (const [a, t] of [[sampled, { cpuMapping: 'off' }], [{ ...sampled, top_k: 0 }, { cpuMapping: 'on' }], [sampled, { cpuMapping: 'on', argmaxCount: 'off' }]] as const) {
      const q = plan(a, t);
      expect(q.derived.countsNonfinite, JSON.stringify([a, t])).toBe(q.variant === 'serial' && t.argmaxCount !== 'off');
      expect(q.derived.countsNonfinite).toBe(false);
    }
  });

  it('the serial path counts them too, and leaves the word alone when not asked', async () => {
    const V = 5000;
    const logits = randomLogits(V, 17);
    for (const i of [0, 77, V - 1]) logits[i] = NaN;
    logits[4000] = -Infinity;
    for (const word of [3, -1]) {
      const plan = planOp(dev, 'sample', { shapes: { logits: [V] }, attributes: { temperature: 0.9, top_k: 8, seed: 5, nonfinite_word: word }, tunables: { cpuMapping: 'on' } });
      expect(plan.variant).toBe('serial');
      const lb = uploadBuffer(dev.device, logits, 'logits');
      const ob = uploadBuffer(dev.device, new Uint32Array(8).fill(SENTINEL), 'output');
      await runPlan(dev, plan, { logits: lb, state: ob });
      const got = await readUint32(dev.device, ob, 8);
      lb.destroy();
      ob.destroy();
      expect(got[WORD], `nonfinite_word ${word}`).toBe(word === 3 ? 4 : SENTINEL);
      expect([...got.subarray(1, 3), ...got.subarray(4)].every((w) => w === SENTINEL)).toBe(true);
      expect(got[0]).toBeLessThan(V);
    }
  });
});

describe('sampling', () => {
  it('top_k = 1 equals argmax for any seed', async () => {
    const logits = randomLogits(3000, 5);
    const want = argmaxRef(logits);
    const seeds = [0, 1, 2, 99, 12345];
    for (const path of ['single_pass', 'topk_path', 'topk_serial'] as const) {
      const got = await drawMany(path, logits, U({ vocab_size: 3000, top_k: 1, temperature: 1.5 }), seeds);
      expect([...got]).toEqual(seeds.map(() => want));
    }
  });

  it('a fixed seed draws the same token twice; both paths agree', async () => {
    const logits = randomLogits(2500, 6, 2);
    const u = U({ vocab_size: 2500, top_k: 50, top_p: 0.9, temperature: 0.8, random_seed: 4242 });
    const a = await select('single_pass', logits, u);
    expect(await select('single_pass', logits, u)).toBe(a);
    const b = await select('topk_path', logits, u);
    expect(await select('topk_path', logits, u)).toBe(b);
    expect(b).toBe(a);
    expect(await select('topk_serial', logits, u)).toBe(b);
  });

  it('matches the reference token for given seeds (temperature, top-k, top-p)', async () => {
    const configs: Partial<SampleUniforms>[] = [
      { temperature: 1 },
      { temperature: 0.7, top_k: 40 },
      { temperature: 1.3, top_p: 0.9 },
      { temperature: 0.9, top_k: 20, top_p: 0.5 },
      { temperature: 2, top_k: 200 },
    ];
    let checked = 0;
    for (const V of [8, 700, 3000]) {
      const logits = randomLogits(V, V + 1, 3);
      for (const c of configs) {
        const u = U({ vocab_size: V, ...c });
        const seeds = [3, 17, 1000, 77777];
        const paths = (['single_pass', 'topk_path', 'topk_serial'] as const).filter((p) => p === 'single_pass' || (u.top_k > 0 && u.top_k <= TOPK_PATH_KMAX));
        for (const path of paths) {
          const got = await drawMany(path, logits, u, seeds);
          for (const [i, s] of seeds.entries()) {
            const ref = sampleRef(logits, { ...u, random_seed: s }, path === 'topk_serial' ? 'topk_path' : path);
            if (ref.margin < 1e-5) continue; // u * total sits on a bucket edge: f32 may pick the neighbour
            expect(got[i], `${path} V=${V} ${JSON.stringify(c)} seed ${s}`).toBe(ref.token);
            checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(80);
  });

  it('sampled frequencies follow the softmax (chi-square, 8 tokens, 2000 + 1000 + 1000 draws)', async () => {
    const logits = Float32Array.from([1.2, -0.3, 0.4, 2.0, 0.0, -1.0, 0.9, 1.5]);
    const u = U({ vocab_size: 8, temperature: 0.9, top_k: 8 });
    const p = sampleRef(logits, u).probs;
    for (const [path, draws] of [['single_pass', 2000], ['topk_path', 1000], ['topk_serial', 1000]] as const) {
      const got = await drawMany(path, logits, u, Array.from({ length: draws }, (_, i) => i));
      const counts = new Array<number>(8).fill(0);
      for (const t of got) counts[t]!++;
      let chi2 = 0;
      for (let i = 0; i < 8; i++) chi2 += (counts[i]! - draws * p[i]!) ** 2 / (draws * p[i]!);
      // 7 degrees of freedom: P(chi2 > 24.32) = 0.001
      expect(chi2, `${path}: counts ${counts.join(' ')}`).toBeLessThan(24.32);
    }
  });

  it('top-p keeps only the nucleus', async () => {
    // probabilities 0.5, 0.3, 0.1, 0.05, 0.03, 0.02 at scattered indices; top_p 0.75 keeps the first two
    const probs = [0.5, 0.3, 0.1, 0.05, 0.03, 0.02];
    const at = [40, 3, 77, 0, 12, 99];
    const logits = new Float32Array(100).fill(-30);
    for (const [r, i] of at.entries()) logits[i] = Math.log(probs[r]!);
    const u = U({ vocab_size: 100, top_p: 0.75 });
    const nucleus = sampleRef(logits, u).probs;
    expect([...nucleus].map((x, i) => (x > 0 ? i : -1)).filter((i) => i >= 0)).toEqual([3, 40]);
    const seeds = Array.from({ length: 80 }, (_, i) => 1000 + i);
    for (const [path, uu] of [['single_pass', u], ['topk_path', { ...u, top_k: 10 }], ['topk_serial', { ...u, top_k: 10 }]] as const) {
      const got = [...(await drawMany(path, logits, uu, seeds))];
      expect(new Set(got), path).toEqual(new Set([3, 40]));
      const share = got.filter((t) => t === 40).length / got.length;
      // 0.5 / (0.5 + 0.3) = 0.625
      expect(share, path).toBeGreaterThan(0.45);
      expect(share, path).toBeLessThan(0.8);
    }
  });

  it('top-k keeps every token tied with the k-th (single_pass) and exactly k (top-k path)', async () => {
    const logits = Float32Array.from([3.2, 1, 3, 3, 3, 0, 3, -2]);
    const u = U({ vocab_size: 8, top_k: 2, temperature: 1 });
    const seeds = Array.from({ length: 40 }, (_, i) => i);
    const single = new Set(await drawMany('single_pass', logits, u, seeds));
    expect(single).toEqual(new Set([0, 2, 3, 4, 6]));
    const topk = new Set(await drawMany('topk_path', logits, u, seeds));
    expect(topk).toEqual(new Set([0, 2]));
    expect(new Set(await drawMany('topk_serial', logits, u, seeds))).toEqual(new Set([0, 2]));
  });
});

describe('sample f16 twin', () => {
  it('sample_f16.wgsl is sample.wgsl with enable f16 and f16 logits', () => {
    const a = readFileSync(wgslPath(reg.variant('sample.single_pass').wgsl), 'utf8');
    const b = readFileSync(wgslPath(reg.variant('sample.single_pass_f16').wgsl), 'utf8');
    const code = (s: string) =>
      s
        .split('\n')
        .map((l) => l.replace(/\/\/.*$/, '').trimEnd())
        .filter((l) => l.trim() !== '');
    expect(b).toMatch(/^enable f16;$/m);
    expect(code(b).filter((l) => l !== 'enable f16;').map((l) => l.replace('array<f16>', 'array<f32>'))).toEqual(code(a));
    for (const n of NAMES) expect(reg.variant(`sample.${n}_f16`).entryPoint).toBe(reg.variant(`sample.${n}`).entryPoint);
  });

  it('the top-k path capacity of sample.wgsl is the reference\'s (output layout)', () => {
    const src = readFileSync(wgslPath(reg.variant('sample.single_pass').wgsl), 'utf8');
    expect(Number(/^const KMAX: u32 = (\d+)u;/m.exec(src)?.[1])).toBe(TOPK_PATH_KMAX);
  });

  it('compiles with the logits retyped to i32 and picks the same argmax', async () => {
    const v = reg.variant('sample.argmax_f16');
    const code = readFileSync(wgslPath(v.wgsl), 'utf8').replace(/^enable f16;$/m, '').replaceAll('array<f16>', 'array<i32>');
    // the whole module (every entry point) type-checks ...
    expect(await wgslErrors(code)).toEqual([]);
    // sample_f16.contract.json's paths, every twin compiled from the retyped WGSL (the logits buffer holds i32 words)
    const registry = registryWithSources(reg, Object.fromEntries(NAMES.map((n) => [`sample.${n}_f16`, code])));
    const logits = Int32Array.from({ length: 5000 }, (_, i) => ((i * 7919) % 1000) - 500);
    const want = argmaxRef(logits);
    const lb = uploadBuffer(dev.device, logits, 'logits');
    const ob = uploadBuffer(dev.device, new Uint32Array(outputWords('topk_path', 5)), 'output');
    const u = U({ vocab_size: 5000, temperature: 0, top_k: 3 });
    // ... and the greedy chains run (pipelines are slow to build on SwiftShader: two of the three paths)
    for (const path of ['argmax', 'single_pass'] as const) {
      const plan = samplePlan(path, u, 'sample_f16', registry);
      expect(plan.passes.map((p) => p.kernel)).toEqual(path === 'argmax' ? ['sample.argmax_f16', 'sample.argmax_reduce_f16'] : ['sample.single_pass_f16']);
      await runPlan(dev, plan, { logits: lb, state: ob }, { registry });
      expect((await readUint32(dev.device, ob, 1))[0], path).toBe(want);
    }
    lb.destroy();
    ob.destroy();
  });
});
