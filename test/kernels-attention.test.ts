/**
 * attention kernels vs the CPU reference (src/reference/attention.ts): the f32 variants through the op-test harness
 * (cases in src/selftest/cases-attention.ts); the f16-KV twins are checked for structure, compiled and run with K/V
 * retyped to i32 on any device, and run with f16 K/V where the device has shader-f16 (the GPU lane).
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { readBuffer, uploadBuffer } from '../src/gpu/buffers.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { f16ToF32, f32ToF16, f32ToF16Bytes } from '../src/formats/f16.ts';
import { defaultRegistry, wgslPath } from '../src/registry/load.ts';
import type { Registry } from '../src/registry/types.ts';
import { ATTENTION_CASES, attentionRequest } from '../src/selftest/cases-attention.ts';
import { describeFailures, runOp } from '../src/selftest/harness.ts';
import { planOp, runPlan } from '../src/selftest/launch.ts';
import { testDevice } from './helpers/device.ts';
import { registryWithSources } from './helpers/emulate-f16.ts';
import {
  attentionRef,
  attentionUniforms,
  kvEnd,
  kvRowsNeeded,
  type AttentionBuffers,
  type AttentionUniforms,
} from '../src/reference/attention.ts';

const reg = defaultRegistry();
let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

const F32_VARIANTS = ['attention.decode', 'attention.decode_small', 'attention.prefill', 'attention.prefill_small'];
const GUARD = 64; // floats after the output that must stay untouched
const SENTINEL = -7777.25;
const F16_SENTINEL = 0x7e55; // an f16 NaN

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function randn(n: number, r: () => number, amp = 1): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = (r() * 2 - 1) * amp;
  return a;
}

interface Case {
  name: string;
  u: AttentionUniforms;
  kvLenBuffer?: number;
  pageTable?: number[];
  /** Variants to skip (with the reason in the case name). */
  only?: string[];
  amp?: number;
}

function makeBuffers(c: Case, seed: number): AttentionBuffers & { q: Float32Array; k: Float32Array; v: Float32Array } {
  const r = rng(seed);
  const u = c.u;
  const b: AttentionBuffers = {
    q: new Float32Array(0),
    k: new Float32Array(0),
    v: new Float32Array(0),
    kvLenBuffer: c.kvLenBuffer !== undefined ? [c.kvLenBuffer] : undefined,
    pageTable: c.pageTable,
  };
  const rows = Math.max(1, kvRowsNeeded(u, kvEnd(u, b), c.pageTable));
  const kvn = rows * u.num_kv_heads * u.head_dim;
  return {
    ...b,
    q: randn(u.seq_len * u.num_heads * u.head_dim, r, c.amp ?? 1),
    k: randn(kvn, r, c.amp ?? 1),
    v: randn(kvn, r),
  };
}

/**
 * Run registry kernel `variant` through attention_kernel.contract.json's variant of the same name (dtypes as the twin
 * declares them; a registry view may compile other WGSL for it), with a guard region after the output.
 */
async function runVariant(
  variant: string,
  u: AttentionUniforms,
  b: { q: ArrayBufferView; k: ArrayBufferView; v: ArrayBufferView; kvLenBuffer?: ArrayLike<number>; pageTable?: ArrayLike<number> },
  opts: { registry?: Registry; outF16?: boolean } = {},
): Promise<{ out: Float32Array; guardOk: boolean }> {
  const types = TWINS.find(([, twin]) => twin === variant)?.[2];
  const kv = types ? 'float16' : 'float32';
  const req = attentionRequest(u, { kvLenBuffer: b.kvLenBuffer?.[0], pageTable: b.pageTable ? Array.from(b.pageTable) : undefined });
  const plan = planOp(dev, 'attention_kernel', {
    shapes: req.shapes,
    dtypes: { q: types?.q === 'f16' ? 'float16' : 'float32', k: kv, v: kv },
    attributes: req.attributes,
    variant: variant.replace(/^attention\./, ''),
    registry: opts.registry,
  });
  expect(plan.passes.map((p) => p.kernel)).toEqual([variant]);
  const n = u.seq_len * u.num_heads * u.head_dim;
  const init = opts.outF16 ? new Uint16Array(n + GUARD).fill(F16_SENTINEL) : new Float32Array(n + GUARD).fill(SENTINEL);
  const bufs = {
    q: uploadBuffer(dev.device, b.q, 'Q'),
    k: uploadBuffer(dev.device, b.k, 'K'),
    v: uploadBuffer(dev.device, b.v, 'V'),
    out: uploadBuffer(dev.device, init, 'output'),
    kvLen: uploadBuffer(dev.device, req.kvLen, 'kv_len'),
    pageTable: uploadBuffer(dev.device, req.pageTable, 'page_table'),
  };
  await runPlan(dev, plan, bufs, { registry: opts.registry });
  const raw = await readBuffer(dev.device, bufs.out, init.byteLength);
  for (const buf of Object.values(bufs)) buf.destroy();
  if (opts.outF16) {
    const h = new Uint16Array(raw);
    return { out: Float32Array.from(h.subarray(0, n), f16ToF32), guardOk: h.subarray(n).every((x) => x === F16_SENTINEL) };
  }
  const all = new Float32Array(raw);
  return { out: all.subarray(0, n), guardOk: all.subarray(n).every((x) => x === SENTINEL) };
}

function compare(out: Float32Array, ref: Float64Array): { maxErr: number; nmse: number; bad: number } {
  let maxErr = 0;
  let se = 0;
  let sr = 0;
  let bad = 0;
  for (let i = 0; i < ref.length; i++) {
    const o = out[i]!;
    if (!Number.isFinite(o)) bad++;
    const e = Math.abs(o - ref[i]!);
    maxErr = Math.max(maxErr, e);
    se += e * e;
    sr += ref[i]! * ref[i]!;
  }
  return { maxErr, nmse: sr > 0 ? se / sr : se, bad };
}

describe('attention vs CPU reference (op-test harness)', () => {
  it('every f32 variant passes every case; the others say why they did not run', async () => {
    const reports = await runOp(dev, 'attention');
    expect(describeFailures(reports)).toEqual([]);
    const status = Object.fromEntries(reports.map((r) => [r.variant, r.status]));
    for (const id of F32_VARIANTS) {
      expect(status[id], id).toBe('ok');
      expect(reports.find((r) => r.variant === id)!.cases.length, id).toBeGreaterThanOrEqual(ATTENTION_CASES.cases.length - 2);
    }
    for (const r of reports) if (r.status !== 'ok') expect(r.reason, r.variant).toBeTruthy();
    // the kernels the model's attention contract runs are tested through it for the contiguous-cache cases
    for (const id of ['attention.decode', 'attention.prefill']) {
      expect(reports.find((r) => r.variant === id)!.cases.filter((c) => c.contract?.startsWith('attention.')).length, id).toBeGreaterThanOrEqual(5);
    }
  });
});

// ---- f16 twins: the f32 kernels with other q_t / kv_t element types ----

/** [f32 variant, twin, element types of the twin] */
const TWINS: [string, string, { q: 'f32' | 'f16'; kv: 'f16' }][] = [
  ['attention.decode', 'attention.decode_f16kv', { q: 'f32', kv: 'f16' }],
  ['attention.decode_small', 'attention.decode_small_f16kv', { q: 'f32', kv: 'f16' }],
  ['attention.prefill_small', 'attention.prefill_small_f16kv', { q: 'f32', kv: 'f16' }],
  ['attention.prefill', 'attention.prefill_f16kv', { q: 'f32', kv: 'f16' }],
  ['attention.decode', 'attention.decode_f16', { q: 'f16', kv: 'f16' }],
  ['attention.decode_small', 'attention.decode_small_f16', { q: 'f16', kv: 'f16' }],
  ['attention.prefill_small', 'attention.prefill_small_f16', { q: 'f16', kv: 'f16' }],
  ['attention.prefill', 'attention.prefill_f16', { q: 'f16', kv: 'f16' }],
];
const A = attentionUniforms;
const TWIN_CASES: Case[] = [
  { name: 'decode kv_len 1100, MQA 8:1, D 80', u: A({ num_heads: 8, num_kv_heads: 1, head_dim: 80, kv_len: 1100, seq_len: 1 }) },
  { name: 'prefill seq 37 start 20, MHA, D 16, softcap 3', u: A({ num_heads: 3, head_dim: 16, kv_len: 57, seq_len: 37, attn_softcap: 3 }) },
  {
    name: 'paged layout (page_size 8), seq 5, GQA 2:1, D 32',
    u: A({ num_heads: 4, num_kv_heads: 2, head_dim: 32, kv_len: 29, seq_len: 5, kv_layout: 1, page_size: 8 }),
    pageTable: [3, 0, 2, 1],
  },
];

/** WGSL code without comments and blank lines. */
function codeLines(wgsl: string): string[] {
  return wgsl
    .split('\n')
    .map((l) => l.replace(/\/\/.*$/, '').trimEnd())
    .filter((l) => l.trim() !== '');
}

/** Source of a twin with its element types replaced (and `enable f16;` dropped). */
function retyped(variantId: string, q: string, kv: string): string {
  return readFileSync(wgslPath(reg.variant(variantId).wgsl), 'utf8')
    .replace(/^enable f16;$/m, '')
    .replace(/^alias q_t = \w+;/m, `alias q_t = ${q};`)
    .replace(/^alias kv_t = \w+;/m, `alias kv_t = ${kv};`);
}

/** Compilation errors of a WGSL module (type checking of every function; no pipeline is built). */
async function wgslErrors(code: string): Promise<string[]> {
  dev.device.pushErrorScope('validation');
  const m = dev.device.createShaderModule({ code, label: 'compile-check' });
  const info = await m.getCompilationInfo();
  const err = await dev.device.popErrorScope();
  return [...info.messages.filter((x) => x.type === 'error').map((x) => `${x.lineNum}:${x.linePos} ${x.message}`), ...(err ? [err.message] : [])];
}

const f16Round = (a: ArrayLike<number>) => Float32Array.from(a, (x) => f16ToF32(f32ToF16(x)));

describe('attention f16 twins', () => {
  for (const [f32Id, twinId, types] of TWINS) {
    it(`${twinId} is ${f32Id} with enable f16 and ${types.q} Q/output, f16 K/V`, () => {
      const a = reg.variant(f32Id);
      const b = reg.variant(twinId);
      expect(b.entryPoint).toBe(a.entryPoint);
      expect(b.workgroup).toEqual(a.workgroup);
      const f16 = readFileSync(wgslPath(b.wgsl), 'utf8');
      expect(f16).toMatch(/^enable f16;$/m);
      expect(f16).toMatch(new RegExp(`^alias q_t = ${types.q};`, 'm'));
      expect(f16).toMatch(/^alias kv_t = f16;/m);
      const asF32 = codeLines(f16)
        .filter((l) => l !== 'enable f16;')
        .map((l) => l.replace(/^alias (q_t|kv_t) = f16;$/, 'alias $1 = f32;'));
      expect(asF32).toEqual(codeLines(readFileSync(wgslPath(a.wgsl), 'utf8')));
    });

    // Without shader-f16 a twin cannot compile. With its f16 types retyped to i32 (f32(x) and q_t(x) convert
    // both ways) every line of it compiles, which catches a missing conversion; the f16-KV twins also run with
    // integer-valued K/V, which i32 and f16 both hold exactly.
    it(`${twinId} compiles with its f16 types retyped to i32${types.q === 'f32' ? ' and matches the reference' : ''}`, async () => {
      const label = `${twinId}(f16 as i32)`;
      if (types.q === 'f16') {
        // type-check only (building a pipeline is slow on SwiftShader; the f16-KV twin runs the same code)
        expect(await wgslErrors(retyped(twinId, 'i32', 'i32'))).toEqual([]);
        return;
      }
      // the twin's contract variant, compiled from the retyped WGSL (K/V buffers hold i32 words)
      const registry = registryWithSources(reg, { [twinId]: retyped(twinId, 'f32', 'i32') });
      for (const c of TWIN_CASES) {
        const b = makeBuffers(c, 77);
        const ki = Int32Array.from(b.k, (x) => Math.round(x * 4));
        const vi = Int32Array.from(b.v, (x) => Math.round(x * 4));
        const u = { ...c.u, scale: c.u.scale / 8 };
        const ref = attentionRef(u, { ...b, k: ki, v: vi });
        const { out, guardOk } = await runVariant(twinId, u, { ...b, k: ki, v: vi }, { registry });
        const { maxErr, bad } = compare(out, ref);
        expect(bad, `${label} on "${c.name}"`).toBe(0);
        expect(maxErr, `${label} on "${c.name}"`).toBeLessThan(1e-4);
        expect(guardOk, `${label}: wrote past the output`).toBe(true);
      }
    });

    it(`${twinId} vs reference with f16 data (needs shader-f16: the GPU lane)`, async (ctx) => {
      if (!dev.caps.features.has('shader-f16')) {
        ctx.skip(`${twinId} needs shader-f16, which this device (${dev.caps.adapterInfo.architecture || 'adapter'}) lacks`);
        return;
      }
      for (const c of TWIN_CASES) {
        const b = makeBuffers(c, 78);
        const q = types.q === 'f16' ? f16Round(b.q) : b.q;
        const ref = attentionRef(c.u, { ...b, q, k: f16Round(b.k), v: f16Round(b.v) });
        const { out, guardOk } = await runVariant(
          twinId,
          c.u,
          { ...b, q: types.q === 'f16' ? f32ToF16Bytes(b.q) : b.q, k: f32ToF16Bytes(b.k), v: f32ToF16Bytes(b.v) },
          { outF16: types.q === 'f16' },
        );
        const { maxErr, nmse, bad } = compare(out, ref);
        const where = `${twinId} on "${c.name}": max err ${maxErr.toExponential(2)}, nmse ${nmse.toExponential(2)}`;
        expect(bad, where).toBe(0);
        // f16 output rounding: half an ulp of |x| <= 1 is 2^-12
        expect(maxErr, where).toBeLessThan(types.q === 'f16' ? 5e-4 : 1e-4);
        expect(guardOk, `${twinId}: wrote past the output`).toBe(true);
      }
    });
  }
});
