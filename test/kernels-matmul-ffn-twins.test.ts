/**
 * The matmul and fused_ffn variants that need shader-f16 (f16 activations, f16 output, native f16 weights) cannot run
 * on SwiftShader. Each is rendered from a template shared with an f32 sibling (src/kernels/templates), so here:
 *  1. every f16 rendering equals the f32 rendering of the same template entry (same entry points, same code) up to
 *     the f16 substitutions (`enable f16;`, f16 element types, f16(...) conversions), comments aside;
 *  2. that f32 rendering (the "twin") runs on this device through the variant's own contract pass (uniforms,
 *     bindings and dispatch of linear_f16.contract.json / fused_ffn.contract.json; linear_f16's output retyped to f32)
 *     against the CPU reference, with a guard region after the output.
 * The registry variants themselves run in the op-test harness wherever the device has shader-f16 (the GPU lane);
 * here the harness reports them skipped with the reason (checked too). Plus: the f32 matmul.gemv and
 * matmul.q4_fused_widetile, whose WGSL enables no f16 although the registry lists shader-f16, run the harness cases
 * with that requirement dropped.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveContract, type KernelContract } from '../src/contracts/index.ts';
import { readBuffer, STORAGE_USAGE, uploadBuffer } from '../src/gpu/buffers.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { opContract } from '../src/ops/runner.ts';
import { registryLookup } from '../src/registry/binder.ts';
import { readWgslSync } from '../src/registry/bundled.ts';
import { defaultRegistry } from '../src/node/registry.ts';
import type { Registry } from '../src/registry/types.ts';
import { fusedFfnRef } from '../src/reference/fused-ffn.ts';
import { matmulAnyReference } from '../src/reference/matmul-quant.ts';
import { randomF16Words, randomQ4KBlocks } from '../src/selftest/cases-matmul-quant.ts';
import { describeFailures, runOp } from '../src/selftest/harness.ts';
import { runPlan, variantsRunning } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { testDevice } from './helpers/device.ts';
import { codeOnly, renderTemplate } from './helpers/templates.ts';
import { registryWithoutF16, registryWithSources } from './helpers/emulate-f16.ts';

const render = renderTemplate;
const code = codeOnly;
/** The f16 substitutions undone. */
const asF32 = (s: string) => code(s).replace(/^enable f16;$/m, '').replace(/\bf16\b/g, 'f32').split('\n').filter((l) => l.trim() !== '').join('\n');

type Kind = 'matmul' | 'ffn';
interface Twin {
  kernel: string;
  algo: string;
  out: string;
  /** vars of the f32 twin */
  f32: Record<string, unknown>;
  kind: Kind;
  /** dtypes the contract routes on (x, and w or gate/up) */
  x: 'float16' | 'float32';
  w: 'float16' | 'q4_k';
  /** the twin reads f32 weights where the variant reads native f16 */
  wF32?: boolean;
}

const f32io = { a: 'f32', c: 'f32' };
const TWINS: Twin[] = [
  { kernel: 'matmul.f16', algo: 'matmul_simple', out: 'matmul_f16.wgsl', f32: { ...f32io, w: 'f32' }, kind: 'matmul', x: 'float16', w: 'float16', wF32: true },
  { kernel: 'matmul.f16_vec4', algo: 'matmul_simple', out: 'matmul_f16.wgsl', f32: { ...f32io, w: 'f32' }, kind: 'matmul', x: 'float16', w: 'float16', wF32: true },
  { kernel: 'matmul.f16_tiled', algo: 'matmul_tiled', out: 'matmul_f16_tiled.wgsl', f32: { ...f32io, w: 'f32' }, kind: 'matmul', x: 'float16', w: 'float16', wF32: true },
  { kernel: 'matmul.gemv_f16a', algo: 'matmul_gemv', out: 'matmul_gemv_f16a.wgsl', f32: f32io, kind: 'matmul', x: 'float16', w: 'float16' },
  { kernel: 'matmul.gemv_subgroup_f16a', algo: 'matmul_gemv_subgroup', out: 'matmul_gemv_subgroup_f16a.wgsl', f32: f32io, kind: 'matmul', x: 'float16', w: 'float16' },
  { kernel: 'matmul.gemv_subgroup_vec4_f16a', algo: 'matmul_gemv_subgroup', out: 'matmul_gemv_subgroup_f16a.wgsl', f32: f32io, kind: 'matmul', x: 'float16', w: 'float16' },
  { kernel: 'matmul.gemv_subgroup_multicol_f16a', algo: 'matmul_gemv_subgroup', out: 'matmul_gemv_subgroup_f16a.wgsl', f32: f32io, kind: 'matmul', x: 'float16', w: 'float16' },
  { kernel: 'matmul.q4_fused_multicol_f16', algo: 'fused_matmul_q4', out: 'fused_matmul_q4_multicol_f16.wgsl', f32: f32io, kind: 'matmul', x: 'float32', w: 'q4_k' },
  { kernel: 'matmul.q4_fused_multicol_f16a', algo: 'fused_matmul_q4', out: 'fused_matmul_q4_multicol_f16a.wgsl', f32: f32io, kind: 'matmul', x: 'float16', w: 'q4_k' },
  { kernel: 'matmul.q4_fused_batched_f16', algo: 'fused_matmul_q4_batched', out: 'fused_matmul_q4_batched_f16.wgsl', f32: f32io, kind: 'matmul', x: 'float32', w: 'q4_k' },
  { kernel: 'matmul.q4_fused_batched_f16a', algo: 'fused_matmul_q4_batched', out: 'fused_matmul_q4_batched_f16a.wgsl', f32: f32io, kind: 'matmul', x: 'float16', w: 'q4_k' },
  { kernel: 'matmul.q4_fused_widetile_f16a', algo: 'fused_matmul_q4_widetile', out: 'fused_matmul_q4_widetile_f16a.wgsl', f32: f32io, kind: 'matmul', x: 'float16', w: 'q4_k' },
  {
    kernel: 'fused_ffn.f16_native',
    algo: 'fused_ffn',
    out: 'fused_ffn_f16.wgsl',
    f32: { w: 'f32' },
    kind: 'ffn',
    x: 'float32',
    w: 'float16',
    wF32: true,
  },
  { kernel: 'fused_ffn.q4k_f16a', algo: 'fused_ffn_q4k', out: 'fused_ffn_q4k_f16.wgsl', f32: { a: 'f32' }, kind: 'ffn', x: 'float16', w: 'q4_k' },
  { kernel: 'fused_ffn.q4k_batched_f16a', algo: 'fused_ffn_q4k', out: 'fused_ffn_q4k_f16.wgsl', f32: { a: 'f32' }, kind: 'ffn', x: 'float16', w: 'q4_k' },
];
TWINS.push({ ...TWINS.find((t) => t.kernel === 'fused_ffn.f16_native')!, kernel: 'fused_ffn.f16_native_batched' });

/** Shapes per twin: [M, N or I, K or H]; decode kernels get few rows. */
function shapesFor(t: Twin): [number, number, number][] {
  const decode = /gemv|multicol|q4k_f16a$|f16_native$/.test(t.kernel);
  const q4 = t.w === 'q4_k';
  if (t.kind === 'ffn') return q4 ? (decode ? [[1, 37, 512], [2, 9, 256]] : [[6, 20, 768], [11, 9, 256]]) : decode ? [[1, 9, 300], [2, 5, 7]] : [[9, 13, 257], [17, 5, 130]];
  if (q4) return decode ? [[1, 33, 2816], [3, 40, 512]] : [[17, 65, 1024], [9, 257, 256]];
  return decode ? [[1, 300, 1000], [3, 9, 77], [1, 7, 33]] : [[17, 70, 129], [130, 33, 257], [2, 3, 0]];
}

const reg = defaultRegistry();
let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

const GUARD = 64;
const GUARD_BITS = 0x7fbadbad;

/** Run one twin case through its contract's pass for the kernel; returns [got, want]. */
async function runTwin(t: Twin, registry: Registry, M: number, N: number, K: number): Promise<{ got: Float32Array; want: Float32Array; guardOk: boolean }> {
  const r = new Rng(`twin/${t.kernel}/${M}x${N}x${K}`);
  const x = r.floats(M * K); // the twin reads f32 activations; the reference sees the same values
  const weights = (): Float32Array | Uint32Array => (t.w === 'q4_k' ? new Uint32Array(randomQ4KBlocks(r, (N * K) / 256).buffer) : t.wF32 ? r.floats(N * K) : randomF16Words(r, N * K));
  let contract: KernelContract;
  let inputs: Record<string, Float32Array | Uint32Array>;
  let want: Float32Array;
  let shapes: Record<string, number[]>;
  let dtypes: Record<string, string>;
  const attributes: Record<string, string | number> = { alpha: 0.75 };
  if (t.kind === 'matmul') {
    const base = opContract('linear_f16');
    contract = { ...base, outputs: { y: { ...base.outputs.y!, dtype: 'float32' } } };
    const w = weights();
    inputs = { x, w };
    shapes = { x: [M, K], w: [N, K] };
    dtypes = { x: t.x, w: t.w };
    want = matmulAnyReference(x, w, { M, N, K, alpha: 0.75 });
  } else {
    contract = opContract('fused_ffn');
    const gate = weights();
    const up = weights();
    inputs = { x, gate, up };
    shapes = { x: [M, K], gate: [N, K], up: [N, K] };
    dtypes = { x: t.x, gate: t.w, up: t.w };
    attributes.activation = 'gelu_tanh';
    want = fusedFfnRef(x, gate, up, { M, hidden_size: K, intermediate_size: N, alpha: 0.75, activation: 1 });
  }
  const kernels = registryLookup(registry, readWgslSync);
  let plan;
  const reasons: string[] = [];
  for (const v of variantsRunning(contract, t.kernel)) {
    try {
      plan = resolveContract(contract, { shapes, dtypes, attributes, variant: v.id, device: dev.caps, kernels, source: `${contract.name} (twin)` });
      break;
    } catch (e) {
      reasons.push((e as Error).message);
    }
  }
  if (!plan) throw new Error(`no variant of ${contract.name} runs ${t.kernel} for M${M} N${N} K${K}: ${reasons.join(' | ')}`);
  const bufs: Record<string, GPUBuffer> = {};
  for (const [k, v] of Object.entries(inputs)) bufs[k] = uploadBuffer(dev.device, v, `twin.${k}`);
  const outName = t.kind === 'matmul' ? 'y' : 'out';
  const outWords = new Uint32Array(M * N + GUARD).fill(GUARD_BITS);
  bufs[outName] = uploadBuffer(dev.device, outWords, `twin.${outName}`, STORAGE_USAGE);
  await runPlan(dev, plan, bufs, { registry });
  const raw = await readBuffer(dev.device, bufs[outName]!, outWords.byteLength);
  for (const b of Object.values(bufs)) b.destroy();
  const got = new Float32Array(raw, 0, M * N);
  const tail = new Uint32Array(raw, 4 * M * N);
  return { got, want, guardOk: tail.every((w) => w === GUARD_BITS) };
}

describe('f16 matmul / fused_ffn variants: one template with an f32 twin', () => {
  for (const t of TWINS) {
    it(`${t.kernel}: the f16 rendering is the f32 twin up to the f16 substitutions`, () => {
      const f16 = render(t.algo, t.out);
      const twin = render(t.algo, t.out, t.f32);
      expect(f16).toMatch(/\bf16\b/);
      expect(asF32(f16)).toBe(asF32(twin));
      expect(code(twin)).not.toMatch(/\bf16\b/);
    });
  }

  for (const t of TWINS) {
    it(`${t.kernel}: the f32 twin through its contract pass matches the CPU reference`, async () => {
      const registry = registryWithSources(reg, { [t.kernel]: render(t.algo, t.out, t.f32) });
      for (const [M, N, K] of shapesFor(t)) {
        const { got, want, guardOk } = await runTwin(t, registry, M, N, K);
        expect(guardOk, `${t.kernel} M${M} N${N} K${K}: guard region after the output`).toBe(true);
        let maxErr = 0;
        let maxRef = 0;
        for (let i = 0; i < want.length; i++) {
          maxErr = Math.max(maxErr, Math.abs(got[i]! - want[i]!));
          maxRef = Math.max(maxRef, Math.abs(want[i]!));
        }
        const bad = [...got].flatMap((g, i) => (Number.isFinite(g) ? [] : [i]));
        expect(bad.slice(0, 8), `${t.kernel} M${M} N${N} K${K}: non-finite (never written?) outputs`).toEqual([]);
        expect(maxErr, `${t.kernel} M${M} N${N} K${K} (max |ref| ${maxRef})`).toBeLessThanOrEqual(1e-5 + 2e-5 * maxRef);
      }
    });
  }

  it('the registry variants are run by the harness where the device has shader-f16, else reported skipped with the reason', async (ctx) => {
    const ids = new Set(TWINS.map((t) => t.kernel));
    const reps = [...(await runOp(dev, 'matmul', { filter: (id) => ids.has(id) })), ...(await runOp(dev, 'fused_ffn', { filter: (id) => ids.has(id) }))];
    expect(reps.map((r) => r.variant).sort()).toEqual([...ids].sort());
    if (!dev.caps.features.has('shader-f16')) {
      for (const r of reps) expect(r, r.variant).toMatchObject({ status: 'skipped', reason: expect.stringMatching(/shader-f16/) });
      ctx.skip('this device has no shader-f16: the GPU lane runs these variants (their f32 twins run above)');
    }
    expect(describeFailures(reps)).toEqual([]);
    for (const r of reps) expect(r.status, r.variant).toBe('ok');
  });
});

describe('matmul variants whose WGSL needs no f16 although the registry lists shader-f16', () => {
  for (const id of ['matmul.gemv', 'matmul.q4_fused_widetile']) {
    it(`${id}: every harness case with the requirement dropped`, async () => {
      const [rep] = await runOp(dev, 'matmul', { filter: (v) => v === id, registry: registryWithoutF16(reg) });
      expect(describeFailures([rep!])).toEqual([]);
      expect(rep!.status).toBe('ok');
      expect(rep!.cases.length).toBeGreaterThanOrEqual(5);
    });
  }
});
