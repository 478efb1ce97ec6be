/**
 * The op-test harness (in the manner of llama.cpp's test-backend-ops): for each operation of OP_CASES, every registry
 * variant whose WGSL entry point exists and whose required features the device has runs every case against the CPU
 * reference. A variant that cannot run is reported with its reason (no WGSL, missing feature, no cases for its
 * dtypes, no contract variant that runs it), never dropped. Kernels are launched the way models launch them: each
 * case (tensor shapes and attributes) is resolved through the operation's op contracts with the contract variant
 * whose pass names the registry kernel (src/selftest/launch.ts), so uniforms and dispatch sizes are the contract's.
 * Per case it checks NaN/Inf, elements never written, max abs error and normalized MSE against per-dtype tolerances,
 * and guard regions after every writable buffer (writes past the end).
 */
import { DTYPE_BYTES, type Plan } from '../contracts/index.ts';
import { readBuffer, STORAGE_USAGE, uploadBuffer } from '../gpu/buffers.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import { loadWgsl, missingFeatures } from '../registry/binder.ts';
import { defaultRegistry } from '../registry/bundled.ts';
import { f16ToF32 } from '../formats/f16.ts';
import type { KernelVariant, Registry } from '../registry/types.ts';
import { REFERENCE, REFERENCE_OPS, type HostTensors, type ReferenceOp, type ReferenceResult } from '../reference/ops.ts';
import { OP_CASES, shapesOf, type OpCase } from './cases.ts';
import { planForKernel, runPlan, variantsRunning, opContract, type Dispatch3 } from './launch.ts';
import { Rng } from './rng.ts';

export type { Dispatch3 };
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
/** The same two patterns for float16 outputs (f16 NaNs no kernel computes). */
export const GUARD_BITS_F16 = 0x7dad;
export const UNWRITTEN_BITS_F16 = 0x7e55;

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
  /** integer (uint32/int32) elements that differ from the reference at all */
  intMismatches?: number;
  /** guard floats changed (writes past the end of a buffer) */
  guardViolations: number;
  /** the element with the largest error */
  worst?: { binding: string; index: number; got: number; want: number };
  dispatch: Dispatch3;
  /** the contract variant that ran the kernel, e.g. `rmsnorm.small_subgroup` */
  contract?: string;
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
  /** Contract tunables for every case (e.g. `max_groups_x`: rows wrap into y sooner); contracts without them are passed over. */
  tunables?: Record<string, number>;
  /** Replace the dispatch size the contract computes by this grid (tests of the harness and of grid-stride loops). */
  dispatch?: Dispatch3;
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

/** Why a variant cannot run here (no WGSL, missing feature, not covered by the cases, no contract), or undefined. */
export async function variantBlocker(dev: TesseraDevice, op: ReferenceOp, v: KernelVariant): Promise<{ status: VariantStatus; reason: string } | undefined> {
  let code: string;
  try {
    code = v.source ?? (await loadWgsl(v.wgsl));
  } catch {
    return { status: 'no-wgsl', reason: `src/kernels/${v.wgsl} does not exist` };
  }
  if (!wgslEntryPoints(code).has(v.entryPoint)) return { status: 'no-wgsl', reason: `${v.wgsl} has no entry point ${v.entryPoint}` };
  const missing = missingFeatures(dev, v);
  if (missing.length) return { status: 'skipped', reason: `requires ${missing.join(', ')}, which this device lacks` };
  const spec = OP_CASES[op];
  const nc = spec.notCovered(v);
  if (nc) return { status: 'no-cases', reason: nc };
  // the contracts this variant's cases run through (as runOp plans them: a case's own list, else the operation's)
  const contracts = [...new Set([...spec.contracts, ...spec.cases.filter((c) => !c.only || c.only(v)).flatMap((c) => c.contracts ?? spec.contracts)])];
  if (!contracts.some((name) => variantsRunning(opContract(name), v.id).length)) {
    return { status: 'fail', reason: `no single-pass variant of ${contracts.map((c) => `${c}.contract.json`).join(', ')} names registry kernel ${v.id}` };
  }
  return undefined;
}

function bytesOf(t: ArrayBufferView): Uint8Array {
  return new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
}

interface Checked {
  /** the registry binding name (what the reference's results are keyed by) */
  binding: string;
  buffer: GPUBuffer;
  /** elements compared (the guard follows) */
  count: number;
  want: ArrayLike<number>;
  /** float16 elements (16-bit words; the guard is GUARD_FLOATS 16-bit words) */
  f16?: boolean;
  /** uint32 / int32 elements (compared as integers: any difference exceeds every tolerance) */
  int?: 'uint32' | 'int32';
}

/** Compare one written buffer (count floats + guard) with the expectation; accumulates into r. */
function compare(r: CaseResult, b: Checked, raw: ArrayBuffer, sums: { err2: number; ref2: number }): void {
  const bits = b.f16 ? new Uint16Array(raw) : new Uint32Array(raw);
  const got = b.f16 ? Float32Array.from(bits.subarray(0, b.count), f16ToF32) : b.int === 'uint32' ? new Uint32Array(raw) : b.int === 'int32' ? new Int32Array(raw) : new Float32Array(raw);
  const unwritten = b.f16 ? UNWRITTEN_BITS_F16 : UNWRITTEN_BITS;
  const guard = b.f16 ? GUARD_BITS_F16 : GUARD_BITS;
  for (let i = 0; i < b.count; i++) {
    const w = b.want[i]!;
    const g = got[i]!;
    if (bits[i] === unwritten) {
      r.unwritten++;
      continue;
    }
    if (!Number.isFinite(w) || !Number.isFinite(g)) {
      if (!(Object.is(w, g) || (Number.isNaN(w) && Number.isNaN(g)))) r.nonFinite++;
      continue;
    }
    const e = Math.abs(g - w);
    if (b.int && e !== 0) r.intMismatches = (r.intMismatches ?? 0) + 1;
    sums.err2 += e * e;
    sums.ref2 += w * w;
    r.maxRef = Math.max(r.maxRef, Math.abs(w));
    if (e > r.maxErr || (r.worst === undefined && e >= r.maxErr)) {
      r.maxErr = e;
      r.worst = { binding: b.binding, index: i, got: g, want: w };
    }
  }
  for (let i = b.count; i < b.count + GUARD_FLOATS; i++) if (bits[i] !== guard) r.guardViolations++;
}

/** The registry uniform values of a single-pass plan and its buffers by registry binding name (the reference's view). */
export function referenceView(plan: Plan, inputs: HostTensors): { uniforms: Record<string, number>; buffers: HostTensors } {
  const pass = plan.passes[0]!;
  const buffers: HostTensors = {};
  let uniforms: Record<string, number> = {};
  for (const b of pass.bindings) {
    if (b.kind === 'uniform') uniforms = b.values;
    else if (b.kind === 'tensor' && inputs[b.tensor]) buffers[b.key] = inputs[b.tensor]!;
  }
  return { uniforms, buffers };
}

const numel = (s: readonly number[]) => s.reduce((a, d) => a * d, 1);

/** Every input a case gives holds at least the bytes its shape and dtype need (a buffer may be longer). */
function checkInputSizes(c: OpCase, plan: Plan, inputs: HostTensors): void {
  for (const [name, shape] of Object.entries(plan.shapes)) {
    const data = inputs[name];
    if (!data) continue; // an output, or an absent optional input
    const need = Math.ceil(numel(shape) * DTYPE_BYTES[plan.dtypes[name]!]!);
    if (data.byteLength < need) throw new Error(`case "${c.name}": input ${name} has ${data.byteLength} bytes, but shape [${shape.join(', ')}] of ${plan.dtypes[name]} needs ${need}`);
  }
  for (const o of plan.outputs) {
    if (DTYPE_BYTES[o.dtype] !== 4 && o.dtype !== 'float16') throw new Error(`case "${c.name}": output ${o.name} is ${o.dtype}; the harness compares 32-bit and float16 outputs`);
  }
}

/**
 * Run one case on one variant with its resolved plan. Inputs are uploaded as given (writable ones followed by a guard
 * region), pure outputs are sized from the contract's output shapes and filled with UNWRITTEN_BITS, and every
 * writable binding is compared: written ones with the reference, the others with their original contents.
 */
export async function runCase(dev: TesseraDevice, v: KernelVariant, op: ReferenceOp, c: OpCase, inputs: HostTensors, plan: Plan, expected: ReferenceResult, opts: HarnessOptions = {}): Promise<CaseResult> {
  const spec = OP_CASES[op];
  const pass = plan.passes[0]!;
  const r: CaseResult = {
    case: c.name,
    pass: false,
    maxErr: 0,
    maxRef: 0,
    nmse: 0,
    nonFinite: 0,
    unwritten: 0,
    guardViolations: 0,
    dispatch: opts.dispatch ? [...opts.dispatch] : [...pass.dispatch],
    contract: `${plan.contract.replace(/ \(.*\)$/, '')}.${plan.variant}`,
    ms: 0,
    problems: [],
  };
  const writable = new Map<string, string>(); // tensor -> binding that writes it
  for (const b of pass.bindings) if (b.kind === 'tensor' && b.access === 'storage' && !b.absent) writable.set(b.tensor, b.key);
  const owned: GPUBuffer[] = [];
  const checked: Checked[] = [];
  try {
    const buffers: Record<string, GPUBuffer> = {};
    for (const [tensor, data] of Object.entries(inputs)) {
      const key = writable.get(tensor);
      if (key === undefined) {
        buffers[tensor] = uploadBuffer(dev.device, data, `${v.id}.${tensor}`);
        owned.push(buffers[tensor]);
        continue;
      }
      // Written in place: contents, then the guard region; bound whole, so a write past the end lands in the guard
      // instead of being clamped away by robust buffer access.
      let want: ArrayLike<number> | undefined = spec.written.includes(key) ? expected[key] : data;
      if (!want) throw new Error(`case "${c.name}": the reference gives no result for binding "${key}"`);
      if (opts.perturbExpected && spec.written.includes(key)) {
        const copy = Float64Array.from(want);
        opts.perturbExpected(key, copy);
        want = copy;
      }
      // a float16 tensor written in place (packed two per u32 word): compared as 2 * words halves, then the f16 guard
      const f16 = plan.dtypes[tensor] === 'float16';
      if (f16 && want === data) want = Float32Array.from(new Uint16Array(data.buffer, data.byteOffset, 2 * data.length), f16ToF32);
      else if (f16 && want.length < 2 * data.length) {
        // an odd element count: the last word's high half is padding the kernel must leave as it was
        const halves = Float32Array.from(new Uint16Array(data.buffer, data.byteOffset, 2 * data.length), f16ToF32);
        halves.set(Array.from(want), 0);
        want = halves;
      }
      const words = f16 ? new Uint32Array(data.length + Math.ceil(GUARD_FLOATS / 2)).fill(GUARD_BITS_F16 * 0x10001) : new Uint32Array(data.length + GUARD_FLOATS).fill(GUARD_BITS);
      words.set(new Uint32Array(data.buffer, data.byteOffset, data.length));
      buffers[tensor] = uploadBuffer(dev.device, bytesOf(words), `${v.id}.${tensor}`, STORAGE_USAGE);
      owned.push(buffers[tensor]);
      const int = plan.dtypes[tensor] === 'uint32' || plan.dtypes[tensor] === 'int32' ? { int: plan.dtypes[tensor] as 'uint32' | 'int32' } : {};
      checked.push({ binding: key, buffer: buffers[tensor], count: f16 ? 2 * data.length : data.length, want, ...(f16 ? { f16 } : {}), ...int });
    }
    for (const o of plan.outputs) {
      const key = writable.get(o.name);
      if (key === undefined) throw new Error(`case "${c.name}": ${plan.contract} variant ${plan.variant} does not write its output ${o.name}`);
      let want = expected[key];
      if (!want) throw new Error(`case "${c.name}": the reference gives no result for output binding "${key}"`);
      if (want.length !== numel(o.shape)) throw new Error(`case "${c.name}": the reference computes ${want.length} elements of "${key}", the contract's output ${o.name} has shape [${o.shape.join(', ')}]`);
      if (opts.perturbExpected) {
        const copy = Float64Array.from(want);
        opts.perturbExpected(key, copy);
        want = copy;
      }
      const count = Math.max(0, want.length - (opts.shrinkOutputs ?? 0));
      const f16 = o.dtype === 'float16';
      // float16: 16-bit words, padded to whole 32-bit words with guard bits
      const words = f16
        ? new Uint16Array(2 * Math.ceil((count + GUARD_FLOATS) / 2)).fill(UNWRITTEN_BITS_F16, 0, count).fill(GUARD_BITS_F16, count)
        : new Uint32Array(count + GUARD_FLOATS).fill(UNWRITTEN_BITS, 0, count).fill(GUARD_BITS, count);
      buffers[o.name] = uploadBuffer(dev.device, bytesOf(words), `${v.id}.${o.name}`, STORAGE_USAGE);
      owned.push(buffers[o.name]!);
      const int = o.dtype === 'uint32' || o.dtype === 'int32' ? { int: o.dtype as 'uint32' | 'int32' } : {};
      checked.push({ binding: key, buffer: buffers[o.name]!, count, want, f16, ...int });
    }
    const t0 = performance.now();
    const times = await runPlan(dev, plan, buffers, { registry: opts.registry, ...(opts.dispatch ? { dispatch: opts.dispatch } : {}) });
    r.ms = times.length ? times.reduce((s, t) => s + t.ms, 0) : performance.now() - t0;
    const sums = { err2: 0, ref2: 0 };
    for (const b of checked) compare(r, b, await readBuffer(dev.device, b.buffer, b.f16 ? 4 * Math.ceil((b.count + GUARD_FLOATS) / 2) : (b.count + GUARD_FLOATS) * 4), sums);
    r.nmse = sums.ref2 > 0 ? sums.err2 / sums.ref2 : sums.err2;
  } finally {
    for (const b of owned) b.destroy();
  }
  // f16 tolerances where the registry says the kernel writes f16 or a compared buffer holds f16
  const tol = checked.some((b) => b.f16) ? TOLERANCE.f16 : (TOLERANCE[(v.outputDtype as Dtype | undefined) ?? 'f32'] ?? TOLERANCE.f32);
  if (r.nonFinite) r.problems.push(`${r.nonFinite} NaN/Inf where the reference is finite`);
  if (r.unwritten) r.problems.push(`${r.unwritten} output elements never written`);
  if (r.intMismatches) r.problems.push(`${r.intMismatches} integer elements differ from the reference`);
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

function failed(name: string, problem: string): CaseResult {
  return { case: name, pass: false, maxErr: NaN, maxRef: NaN, nmse: NaN, nonFinite: 0, unwritten: 0, guardViolations: 0, dispatch: [0, 0, 0], ms: 0, problems: [problem] };
}

/** Run every case of `op` on every variant of it (see HarnessOptions). */
export async function runOp(dev: TesseraDevice, op: ReferenceOp, opts: HarnessOptions = {}): Promise<VariantReport[]> {
  const registry = opts.registry ?? defaultRegistry();
  const operation = registry.operations.get(op);
  if (!operation) throw new Error(`operation "${op}" is not in the registry ${registry.file}`);
  const spec = OP_CASES[op];
  const cases = (opts.cases ?? spec.cases).filter((c) => (!c.heavy || opts.heavy) && (!opts.caseFilter || opts.caseFilter(c.name)));
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
  // Case-major: inputs are generated once per case and the reference once per (case, entry point, uniform values).
  for (const c of cases) {
    const inputs = c.inputs(new Rng(`${op}/${c.name}`));
    const refs = new Map<string, ReferenceResult | Error>();
    for (const v of runnable) {
      if (c.only && !c.only(v)) continue;
      const rep = reports.find((x) => x.variant === v.id)!;
      let res: CaseResult;
      try {
        const got = planForKernel(dev, c.contracts ?? spec.contracts, v.id, {
          shapes: shapesOf(c, v),
          ...(c.dtypes ? { dtypes: c.dtypes } : {}),
          ...(c.attributes ? { attributes: c.attributes } : {}),
          ...(opts.tunables || c.tunables ? { tunables: { ...c.tunables, ...opts.tunables } } : {}),
          registry,
        });
        if (!('plan' in got)) throw new Error(`no contract variant running ${v.id} accepts this case: ${got.reasons.join(' | ')}`);
        checkInputSizes(c, got.plan, inputs);
        const view = referenceView(got.plan, inputs);
        const key = `${v.wgsl}|${v.entryPoint}|${JSON.stringify(view.uniforms)}|${Object.keys(view.buffers).map((k) => `${k}=${Object.keys(inputs).find((t) => inputs[t] === view.buffers[k])}`).join(',')}`;
        let ref = refs.get(key);
        if (!ref) {
          try {
            ref = REFERENCE[op](view.buffers, view.uniforms, v.entryPoint, v.id);
          } catch (e) {
            ref = e as Error;
          }
          refs.set(key, ref);
        }
        if (ref instanceof Error) throw ref;
        res = await runCase(dev, v, op, c, inputs, got.plan, ref, opts);
      } catch (e) {
        res = failed(c.name, (e as Error).message);
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
