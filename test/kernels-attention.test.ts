/**
 * attention kernels vs the CPU reference (src/reference/attention.ts): the f32 variants through the op-test harness
 * (cases in src/selftest/cases-attention.ts); the f16-KV twins are checked for structure, compiled and run with K/V
 * retyped to i32 on any device, and run with f16 K/V where the device has shader-f16 (the GPU lane).
 */
import { readFileSync } from 'node:fs';
import { Template } from '@huggingface/jinja';
import { beforeAll, describe, expect, it } from 'vitest';
import { readBuffer, uploadBuffer } from '../src/gpu/buffers.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { f16ToF32, f32ToF16, f32ToF16Bytes } from '../src/formats/f16.ts';
import { defaultRegistry, wgslPath } from '../src/node/registry.ts';
import type { Registry } from '../src/registry/types.ts';
import { ATTENTION_CASES, attentionFits, attentionKind, attentionRequest } from '../src/selftest/cases-attention.ts';
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

const F32_VARIANTS = [
  'attention.decode',
  'attention.decode_small',
  'attention.prefill',
  'attention.prefill_small',
  'attention.decode_subgroup',
  'attention.prefill_streaming',
  'attention.decode_streaming',
];
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
      // every case meant for the kernel ran (and there are several)
      const meant = ATTENTION_CASES.cases.filter((c) => !c.only || c.only(reg.variant(id))).map((c) => c.name);
      expect(meant.length, id).toBeGreaterThanOrEqual(8);
      expect(reports.find((r) => r.variant === id)!.cases.map((c) => c.case), id).toEqual(meant);
    }
    for (const r of reports) if (r.status !== 'ok') expect(r.reason, r.variant).toBeTruthy();
    // every f16 kernel with WGSL has cases; on a device without shader-f16 it reports that instead of running them
    for (const r of reports.filter((x) => attentionKind(reg.variant(x.variant)) !== 'f32' && x.status !== 'no-wgsl')) {
      expect(ATTENTION_CASES.cases.filter((c) => c.only!(reg.variant(r.variant))).length, r.variant).toBeGreaterThanOrEqual(2);
      if (!dev.caps.features.has('shader-f16')) {
        expect(r.status, r.variant).toBe('skipped');
        expect(r.reason, r.variant).toMatch(/shader-f16.*lacks/);
      } else expect(r.status, r.variant).toBe('ok');
    }
    // the kernels the model's attention contract runs are tested through it for the contiguous-cache cases
    for (const id of ['attention.decode', 'attention.prefill']) {
      expect(reports.find((r) => r.variant === id)!.cases.filter((c) => c.contract?.startsWith('attention.')).length, id).toBeGreaterThanOrEqual(5);
    }
  });
});

// ---- f16 twins: the f32 kernels with other q_t / kv_t element types ----

/** The template every attention*.wgsl is rendered from, and each file's vars. */
const TEMPLATE = new Template(readFileSync('src/kernels/templates/attention.wgsl.jinja', 'utf8'));
const TEMPLATE_VARS = new Map(
  (JSON.parse(readFileSync('src/kernels/templates/attention.variants.json', 'utf8')) as { out: string; vars: Record<string, unknown> }[]).map((e) => [e.out, e.vars]),
);
/** The template rendered with a file's vars but f32 element types (the f32 kernel the file is a retyping of). */
function renderedF32(file: string): string {
  const vars = TEMPLATE_VARS.get(file);
  if (!vars) throw new Error(`${file} is not rendered from src/kernels/templates/attention.wgsl.jinja`);
  return TEMPLATE.render({ ...vars, q: 'f32', kv: 'f32', out: file });
}

type TwinTypes = { q: 'f32' | 'f16'; kv: 'f16' };
/**
 * [f32 registry variant rendered with the same vars (undefined where the registry has none), twin, element types of
 * the twin]: every registry attention variant with f16 K/V.
 */
const TWINS: [string | undefined, string, TwinTypes][] = [
  ['attention.decode', 'attention.decode_f16kv', { q: 'f32', kv: 'f16' }],
  ['attention.decode_small', 'attention.decode_small_f16kv', { q: 'f32', kv: 'f16' }],
  ['attention.prefill_small', 'attention.prefill_small_f16kv', { q: 'f32', kv: 'f16' }],
  ['attention.prefill', 'attention.prefill_f16kv', { q: 'f32', kv: 'f16' }],
  ['attention.decode', 'attention.decode_f16', { q: 'f16', kv: 'f16' }],
  ['attention.decode_small', 'attention.decode_small_f16', { q: 'f16', kv: 'f16' }],
  ['attention.prefill_small', 'attention.prefill_small_f16', { q: 'f16', kv: 'f16' }],
  ['attention.prefill', 'attention.prefill_f16', { q: 'f16', kv: 'f16' }],
  ['attention.decode_subgroup', 'attention.decode_online_f16kv', { q: 'f32', kv: 'f16' }],
  ['attention.decode_subgroup', 'attention.decode_online_f16', { q: 'f16', kv: 'f16' }],
  [undefined, 'attention.decode_online_head256_f16kv', { q: 'f32', kv: 'f16' }],
  [undefined, 'attention.decode_paged_f16kv', { q: 'f32', kv: 'f16' }],
  [undefined, 'attention.decode_paged_f16', { q: 'f16', kv: 'f16' }],
  [undefined, 'attention.decode_chunked_f16kv', { q: 'f32', kv: 'f16' }],
  [undefined, 'attention.decode_chunked_f16', { q: 'f16', kv: 'f16' }],
  ['attention.prefill_streaming', 'attention.prefill_streaming_f16kv', { q: 'f32', kv: 'f16' }],
  ['attention.decode_streaming', 'attention.decode_streaming_f16kv', { q: 'f32', kv: 'f16' }],
  ['attention.prefill_streaming', 'attention.prefill_streaming_f16', { q: 'f16', kv: 'f16' }],
  ['attention.decode_streaming', 'attention.decode_streaming_f16', { q: 'f16', kv: 'f16' }],
  [undefined, 'attention.prefill_head128_f16kv', { q: 'f32', kv: 'f16' }],
  [undefined, 'attention.prefill_head256_f16kv', { q: 'f32', kv: 'f16' }],
  [undefined, 'attention.prefill_head512_f16kv', { q: 'f32', kv: 'f16' }],
  [undefined, 'attention.prefill_head512_f16', { q: 'f16', kv: 'f16' }],
];
const A = attentionUniforms;
/** Each twin runs the cases its contract variant accepts (attentionFits), at least one. */
const TWIN_CASES: Case[] = [
  { name: 'decode kv_len 1100, MQA 8:1, D 80', u: A({ num_heads: 8, num_kv_heads: 1, head_dim: 80, kv_len: 1100, seq_len: 1 }) },
  { name: 'prefill seq 37 start 20, MHA, D 16, softcap 3', u: A({ num_heads: 3, head_dim: 16, kv_len: 57, seq_len: 37, attn_softcap: 3 }) },
  {
    name: 'paged layout (page_size 8), seq 5, GQA 2:1, D 32',
    u: A({ num_heads: 4, num_kv_heads: 2, head_dim: 32, kv_len: 29, seq_len: 5, kv_layout: 1, page_size: 8 }),
    pageTable: [3, 0, 2, 1],
  },
  {
    name: 'paged layout (page_size 16), decode, kv_start 5, D 128',
    u: A({ num_heads: 2, head_dim: 128, kv_len: 70, seq_len: 1, kv_layout: 1, page_size: 16, kv_start: 5 }),
    pageTable: [2, 4, 0, 3, 1],
  },
  { name: 'prefill seq 45 start 30, window 20, GQA 2:1, D 128', u: A({ num_heads: 2, num_kv_heads: 1, head_dim: 128, kv_len: 75, seq_len: 45, sliding_window: 20 }) },
  { name: 'decode kv_len 300, GQA 2:1, D 256, softcap 4', u: A({ num_heads: 4, num_kv_heads: 2, head_dim: 256, kv_len: 300, seq_len: 1, attn_softcap: 4 }) },
  { name: 'prefill seq 33 start 2, D 256, kv_len from the binding', u: A({ num_heads: 2, head_dim: 256, kv_len: 0, seq_len: 33, kv_len_source: 1 }), kvLenBuffer: 35 },
  { name: 'prefill seq 21 start 3, GQA 2:1, D 512', u: A({ num_heads: 4, num_kv_heads: 2, head_dim: 512, kv_len: 24, seq_len: 21 }) },
];
const twinCases = (id: string) => TWIN_CASES.filter((c) => attentionFits(reg.variant(id), c.u));

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
    it(`${twinId} is ${f32Id ?? 'the template with its vars and f32 types'} with enable f16 and ${types.q} Q/output, f16 K/V`, () => {
      const b = reg.variant(twinId);
      const f16 = readFileSync(wgslPath(b.wgsl), 'utf8');
      expect(f16).toMatch(/^enable f16;$/m);
      expect(f16).toMatch(new RegExp(`^alias q_t = ${types.q};`, 'm'));
      expect(f16).toMatch(/^alias kv_t = f16;/m);
      const asF32 = codeLines(f16)
        .filter((l) => l !== 'enable f16;')
        .map((l) => l.replace(/^alias (q_t|kv_t) = f16;$/, 'alias $1 = f32;'));
      const f32Code = codeLines(renderedF32(b.wgsl));
      expect(asF32).toEqual(f32Code);
      if (f32Id) {
        const a = reg.variant(f32Id);
        expect(b.entryPoint).toBe(a.entryPoint);
        expect(b.workgroup).toEqual(a.workgroup);
        expect(codeLines(readFileSync(wgslPath(a.wgsl), 'utf8'))).toEqual(f32Code);
      }
      expect(twinCases(twinId).length, 'cases for it').toBeGreaterThan(0);
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
      for (const c of twinCases(twinId)) {
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
      for (const c of twinCases(twinId)) {
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
