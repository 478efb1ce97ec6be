/**
 * The op-test harness (in the manner of llama.cpp's test-backend-ops): for each operation of OP_CASES, every registry
 * variant whose WGSL entry point exists and whose required features the device has runs every case against the CPU
 * reference. A variant that cannot run is reported with its reason (no WGSL, missing feature, no cases for its
 * dtypes), never dropped. Per case it checks NaN/Inf, elements never written, max abs error and normalized MSE
 * against per-dtype tolerances, and guard regions after every writable buffer (writes past the end).
 */
import { readBuffer, STORAGE_USAGE, uploadBuffer } from '../gpu/buffers.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import { Recorder } from '../gpu/recorder.ts';
import { getKernel, loadWgsl, missingFeatures, recordKernel, type BufferArg } from '../registry/binder.ts';
import { defaultRegistry } from '../registry/load.ts';
import type { KernelVariant, Registry } from '../registry/types.ts';
import { REFERENCE, REFERENCE_OPS, type HostTensors, type ReferenceOp, type ReferenceResult } from '../reference/ops.ts';
import { DISPATCH, OP_CASES, type Dispatch3, type OpCase } from './cases.ts';
import { Rng } from './rng.ts';

export type Dtype = 'f32' | 'f16';

export interface Tolerance {
  /** max |got - want| <= atol + rtol * max |want| (scale-aware: errors are relative to the output's magnitude) */
  atol: number;
  rtol: number;
  /** sum (got - want)^2 / sum want^2 */
  nmse: number;
}

/** Tolerances per output dtype, written once. */
export const TOLERANCE: Record<Dtype, Tolerance> = {
  f32: { atol: 1e-5, rtol: 2e-5, nmse: 1e-9 },
  f16: { atol: 1e-3, rtol: 2e-3, nmse: 1e-6 },
};

/** Floats after every writable buffer that must come back untouched. */
export const GUARD_FLOATS = 256;
/** Bit pattern of the guard region (a NaN no kernel computes). */
export const GUARD_BITS = 0x7fbadbad;
/** Bit pattern pure outputs are filled with before the kernel runs: still there afterwards = never written. */
export const UNWRITTEN_BITS = 0x7fc0ffee;

export type VariantStatus = 'ok' | 'fail' | 'skipped' | 'no-wgsl' | 'no-cases';

export interface CaseResult {
  case: string;
  pass: boolean;
  /** max |got - want| over all compared elements */
  maxErr: number;
  /** max |want| (the scale maxErr is judged against) */
  maxRef: number;
  nmse: number;
  /** elements that are NaN/Inf where the reference is finite (or the other way round) */
  nonFinite: number;
  /** output elements still holding UNWRITTEN_BITS */
  unwritten: number;
  /** guard floats changed (writes past the end of a buffer) */
  guardViolations: number;
  /** the element with the largest error */
  worst?: { binding: string; index: number; got: number; want: number };
  dispatch: Dispatch3;
  /** GPU time (timestamps) or submit-to-completion wall time */
  ms: number;
  /** why it failed, in words */
  problems: string[];
}

export interface VariantReport {
  variant: string;
  op: ReferenceOp;
  entryPoint: string;
  status: VariantStatus;
  /** why it was not run (or why it failed outside the cases) */
  reason?: string;
  cases: CaseResult[];
}

export interface HarnessOptions {
  /** Run only variants whose id passes (others are left out of the report). */
  filter?: (variantId: string) => boolean;
  /** Run only cases whose name passes. */
  caseFilter?: (caseName: string) => boolean;
  /** Include cases marked heavy (default false). */
  heavy?: boolean;
  /** Replace the op's cases. */
  cases?: OpCase[];
  /** Replace the dispatch size (tests of the harness and of grid-stride loops). */
  dispatch?: (v: KernelVariant, u: Record<string, number>) => Dispatch3;
  /** Change the expected values before comparing (tests that the harness catches wrong output). */
  perturbExpected?: (binding: string, want: Float64Array) => void;
  /** Allocate pure outputs this many elements short (tests that the guard region catches out-of-bounds writes). */
  shrinkOutputs?: number;
  registry?: Registry;
  /** Called after each variant (progress output). */
  onVariant?: (r: VariantReport) => void;
}

const COMMENT = /\/\/.*$/gm;
const ENTRY = /@compute\b[^;{}]*?\bfn\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(/g;

/** Names of the @compute entry points in WGSL source. */
export function wgslEntryPoints(code: string): Set<string> {
  const out = new Set<string>();
  for (const m of code.replace(COMMENT, '').matchAll(ENTRY)) out.add(m[1]!);
  return out;
}

/** Why a variant cannot run here (no WGSL, missing feature, not covered by the cases), or undefined if it can. */
export async function variantBlocker(dev: TesseraDevice, op: ReferenceOp, v: KernelVariant): Promise<{ status: VariantStatus; reason: string } | undefined> {
  let code: string;
  try {
    code = await loadWgsl(v.wgsl);
  } catch {
    return { status: 'no-wgsl', reason: `src/kernels/${v.wgsl} does not exist` };
  }
  if (!wgslEntryPoints(code).has(v.entryPoint)) return { status: 'no-wgsl', reason: `${v.wgsl} has no entry point ${v.entryPoint}` };
  const missing = missingFeatures(dev, v);
  if (missing.length) return { status: 'skipped', reason: `requires ${missing.join(', ')}, which this device lacks` };
  const nc = OP_CASES[op].notCovered(v);
  if (nc) return { status: 'no-cases', reason: nc };
  if (!DISPATCH[v.id]) return { status: 'fail', reason: `no dispatch formula for ${v.id} in src/selftest/cases.ts DISPATCH` };
  return undefined;
}

function bytesOf(t: Float32Array | Uint32Array): Uint8Array {
  return new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
}

interface BoundBuffer {
  name: string;
  buffer: GPUBuffer;
  /** elements compared (the guard follows) */
  count: number;
  want?: ArrayLike<number>;
}

/** Compare one written buffer (count floats + guard) with the expectation; accumulates into r. */
function compare(r: CaseResult, b: BoundBuffer, raw: ArrayBuffer, want: ArrayLike<number>, sums: { err2: number; ref2: number }): void {
  const got = new Float32Array(raw);
  const bits = new Uint32Array(raw);
  for (let i = 0; i < b.count; i++) {
    const w = want[i]!;
    const g = got[i]!;
    if (bits[i] === UNWRITTEN_BITS) {
      r.unwritten++;
      continue;
    }
    if (!Number.isFinite(w) || !Number.isFinite(g)) {
      if (!(Object.is(w, g) || (Number.isNaN(w) && Number.isNaN(g)))) r.nonFinite++;
      continue;
    }
    const e = Math.abs(g - w);
    sums.err2 += e * e;
    sums.ref2 += w * w;
    r.maxRef = Math.max(r.maxRef, Math.abs(w));
    if (e > r.maxErr || (r.worst === undefined && e >= r.maxErr)) {
      r.maxErr = e;
      r.worst = { binding: b.name, index: i, got: g, want: w };
    }
  }
  for (let i = b.count; i < b.count + GUARD_FLOATS; i++) if (bits[i] !== GUARD_BITS) r.guardViolations++;
}

/** Run one case on one variant. `inputs` and `expected` are shared by the variants of the operation. */
export async function runCase(
  dev: TesseraDevice,
  v: KernelVariant,
  op: ReferenceOp,
  c: OpCase,
  inputs: HostTensors,
  expected: ReferenceResult,
  opts: HarnessOptions = {},
): Promise<CaseResult> {
  const spec = OP_CASES[op];
  const dispatch = opts.dispatch ? opts.dispatch(v, c.uniforms) : DISPATCH[v.id]!(c.uniforms, v);
  const r: CaseResult = {
    case: c.name,
    pass: false,
    maxErr: 0,
    maxRef: 0,
    nmse: 0,
    nonFinite: 0,
    unwritten: 0,
    guardViolations: 0,
    dispatch,
    ms: 0,
    problems: [],
  };
  const kernel = await getKernel(dev, v);
  const owned: GPUBuffer[] = [];
  const checked: BoundBuffer[] = [];
  try {
    const args: Record<string, BufferArg> = {};
    for (const b of v.bindings) {
      if (b.type === 'uniform') continue;
      const data = inputs[b.name];
      const written = spec.written.includes(b.name);
      if (b.type === 'read-only-storage') {
        if (!data) throw new Error(`case "${c.name}" gives no contents for read-only binding "${b.name}"`);
        owned.push(uploadBuffer(dev.device, data, `${v.id}.${b.name}`));
        args[b.name] = owned[owned.length - 1]!;
        continue;
      }
      // Writable: contents (or the UNWRITTEN fill), then the guard region; bound whole, so a write past `count`
      // lands in the guard instead of being clamped away by robust buffer access.
      let want: ArrayLike<number> | undefined = written ? expected[b.name] : data;
      if (!want) throw new Error(`case "${c.name}": no reference output and no contents for writable binding "${b.name}"`);
      if (opts.perturbExpected && written) {
        const copy = Float64Array.from(want);
        opts.perturbExpected(b.name, copy);
        want = copy;
      }
      const count = data ? data.length : Math.max(0, want.length - (opts.shrinkOutputs ?? 0));
      const words = new Uint32Array(count + GUARD_FLOATS);
      if (data) words.set(new Uint32Array(data.buffer, data.byteOffset, data.length));
      else words.fill(UNWRITTEN_BITS, 0, count);
      words.fill(GUARD_BITS, count);
      const buf = uploadBuffer(dev.device, bytesOf(words), `${v.id}.${b.name}`, STORAGE_USAGE);
      owned.push(buf);
      args[b.name] = buf;
      checked.push({ name: b.name, buffer: buf, count, want });
    }
    const rec = new Recorder(dev);
    recordKernel(rec, dev, kernel, args, c.uniforms, dispatch);
    const t0 = performance.now();
    const times = await rec.submit({ wait: true });
    r.ms = times.length ? times.reduce((s, t) => s + t.ms, 0) : performance.now() - t0;
    const sums = { err2: 0, ref2: 0 };
    for (const b of checked) {
      const raw = await readBuffer(dev.device, b.buffer, (b.count + GUARD_FLOATS) * 4);
      compare(r, b, raw, b.want!, sums);
    }
    r.nmse = sums.ref2 > 0 ? sums.err2 / sums.ref2 : sums.err2;
  } finally {
    for (const b of owned) b.destroy();
  }
  const tol = TOLERANCE[(v.outputDtype as Dtype | undefined) ?? 'f32'] ?? TOLERANCE.f32;
  if (r.nonFinite) r.problems.push(`${r.nonFinite} NaN/Inf where the reference is finite`);
  if (r.unwritten) r.problems.push(`${r.unwritten} output elements never written`);
  if (r.guardViolations) r.problems.push(`${r.guardViolations} guard floats overwritten (write past the end of a buffer)`);
  const limit = tol.atol + tol.rtol * r.maxRef;
  if (r.maxErr > limit) {
    const w = r.worst!;
    r.problems.push(`max error ${r.maxErr.toExponential(2)} > ${limit.toExponential(2)} at ${w.binding}[${w.index}]: got ${w.got}, want ${w.want}`);
  }
  if (r.nmse > tol.nmse) r.problems.push(`NMSE ${r.nmse.toExponential(2)} > ${tol.nmse.toExponential(0)}`);
  r.pass = r.problems.length === 0;
  return r;
}

/** Run every case of `op` on every variant of it (see HarnessOptions). */
export async function runOp(dev: TesseraDevice, op: ReferenceOp, opts: HarnessOptions = {}): Promise<VariantReport[]> {
  const registry = opts.registry ?? defaultRegistry();
  const operation = registry.operations.get(op);
  if (!operation) throw new Error(`operation "${op}" is not in the registry ${registry.file}`);
  const cases = (opts.cases ?? OP_CASES[op].cases).filter((c) => (!c.heavy || opts.heavy) && (!opts.caseFilter || opts.caseFilter(c.name)));
  const reports: VariantReport[] = [];
  const runnable: KernelVariant[] = [];
  for (const v of operation.variants.values()) {
    if (opts.filter && !opts.filter(v.id)) continue;
    const block = await variantBlocker(dev, op, v);
    const rep: VariantReport = { variant: v.id, op, entryPoint: v.entryPoint, status: block?.status ?? 'ok', cases: [] };
    if (block) rep.reason = block.reason;
    else runnable.push(v);
    reports.push(rep);
  }
  // Case-major: inputs are generated once per case and the reference once per (case, entry point).
  for (const c of cases) {
    const inputs = c.inputs(new Rng(`${op}/${c.name}`));
    const refs = new Map<string, ReferenceResult | Error>();
    for (const v of runnable) {
      if (c.only && !c.only(v)) continue;
      const rep = reports.find((x) => x.variant === v.id)!;
      let ref = refs.get(v.entryPoint);
      if (!ref) {
        try {
          ref = REFERENCE[op](inputs, c.uniforms, v.entryPoint);
        } catch (e) {
          ref = e as Error;
        }
        refs.set(v.entryPoint, ref);
      }
      let res: CaseResult;
      try {
        if (ref instanceof Error) throw ref;
        res = await runCase(dev, v, op, c, inputs, ref, opts);
      } catch (e) {
        res = {
          case: c.name,
          pass: false,
          maxErr: NaN,
          maxRef: NaN,
          nmse: NaN,
          nonFinite: 0,
          unwritten: 0,
          guardViolations: 0,
          dispatch: [0, 0, 0],
          ms: 0,
          problems: [(e as Error).message],
        };
      }
      rep.cases.push(res);
    }
  }
  for (const rep of reports) {
    if (rep.status === 'ok' && rep.cases.some((c) => !c.pass)) rep.status = 'fail';
    opts.onVariant?.(rep);
  }
  return reports;
}

/** Run every operation of OP_CASES (optionally filtered by variant id). */
export async function runAllOps(dev: TesseraDevice, opts: HarnessOptions = {}): Promise<VariantReport[]> {
  const out: VariantReport[] = [];
  for (const op of REFERENCE_OPS) out.push(...(await runOp(dev, op, opts)));
  return out;
}

/** One line per failed case: "variant [case]: problem; problem". */
export function describeFailures(reports: VariantReport[]): string[] {
  const lines: string[] = [];
  for (const r of reports) {
    if (r.status === 'fail' && r.cases.length === 0) lines.push(`${r.variant}: ${r.reason}`);
    for (const c of r.cases) if (!c.pass) lines.push(`${r.variant} [${c.case}]: ${c.problems.join('; ')}`);
  }
  return lines;
}
