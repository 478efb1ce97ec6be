/**
 * `tessera selftest`: every kernel variant the op-test harness covers, run against the CPU reference on this device
 * (launched through the op contracts, like the models launch them). One row per variant; variants that cannot run
 * say why. `--support [file]` also writes this device's column of docs/kernel-support.md (src/selftest/support.ts).
 */
import type { TesseraDevice } from '../gpu/device.ts';
import { runAllOps, type HarnessOptions, type VariantReport, type VariantStatus } from './harness.ts';

export interface SelfTestRow {
  variant: string;
  status: VariantStatus;
  /** cases run */
  cases: number;
  passed: number;
  /** worst max abs error over the cases (NaN when none ran) */
  maxErr: number;
  /** worst normalized MSE over the cases */
  nmse: number;
  /** total GPU (or submit) time of the cases */
  ms: number;
  /** why not run, or the first failure */
  reason?: string;
}

export interface SelfTestOptions {
  /** Variant id substring, operation name, or RegExp (e.g. "rmsnorm", "rope.qk", /^matmul\./). */
  filter?: string | RegExp;
  /** Progress callback, one call per variant. */
  onRow?: (row: SelfTestRow) => void;
  /** Include the heavy cases (more than 65535 rows, ...). Default: on unless the adapter is SwiftShader. */
  heavy?: boolean;
}

export function toRow(r: VariantReport): SelfTestRow {
  const worst = (f: (c: VariantReport['cases'][number]) => number) => (r.cases.length ? Math.max(...r.cases.map(f)) : NaN);
  const failed = r.cases.find((c) => !c.pass);
  return {
    variant: r.variant,
    status: r.status,
    cases: r.cases.length,
    passed: r.cases.filter((c) => c.pass).length,
    maxErr: worst((c) => c.maxErr),
    nmse: worst((c) => c.nmse),
    ms: r.cases.reduce((s, c) => s + c.ms, 0),
    ...(r.reason ? { reason: r.reason } : failed ? { reason: `[${failed.case}] ${failed.problems.join('; ')}` } : {}),
  };
}

function matcher(filter: SelfTestOptions['filter']): HarnessOptions['filter'] {
  if (filter === undefined) return undefined;
  if (filter instanceof RegExp) return (id) => filter.test(id);
  return (id) => id.includes(filter);
}

export function isSoftwareAdapter(dev: TesseraDevice): boolean {
  // SwiftShader, and Mesa's lavapipe (llvmpipe: architecture "software"), which gives CPU machines shader-f16
  const a = dev.caps.adapterInfo;
  return /swiftshader|llvmpipe/i.test(`${a.architecture} ${a.description} ${a.device}`) || a.architecture === 'software';
}

/** The harness reports behind the rows (the support table is built from them too). */
export async function runSelfTestReports(dev: TesseraDevice, opts: SelfTestOptions = {}): Promise<VariantReport[]> {
  // GPU waits hold Node's event loop open in src/gpu (gpuWait), so a long SwiftShader dispatch cannot end the process.
  return runAllOps(dev, {
    filter: matcher(opts.filter),
    heavy: opts.heavy ?? !isSoftwareAdapter(dev),
    onVariant: opts.onRow ? (r) => opts.onRow!(toRow(r)) : undefined,
  });
}

export async function runSelfTest(dev: TesseraDevice, opts: SelfTestOptions = {}): Promise<SelfTestRow[]> {
  return (await runSelfTestReports(dev, opts)).map(toRow);
}

const num = (x: number, digits = 2) => (Number.isNaN(x) ? '-' : x === 0 ? '0' : x.toExponential(digits));

/**
 * A fixed-width table, one line per variant, then a summary line. `all: false` leaves out the variants without
 * WGSL (they are counted in the summary).
 */
export function formatSelfTest(rows: SelfTestRow[], opts: { all?: boolean } = {}): string {
  const head = ['variant', 'status', 'cases', 'max err', 'nmse', 'ms', 'note'];
  const shown = opts.all === false ? rows.filter((r) => r.status !== 'no-wgsl') : rows;
  const body = shown.map((r) => [
    r.variant,
    r.status,
    r.cases ? `${r.passed}/${r.cases}` : '-',
    num(r.maxErr),
    num(r.nmse),
    r.cases ? r.ms.toFixed(1) : '-',
    r.reason ?? '',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (i === 6 ? 0 : b[i]!.length))));
  const line = (cells: string[]) => cells.map((c, i) => (i === 6 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd();
  const count = (s: VariantStatus) => rows.filter((r) => r.status === s).length;
  const summary =
    `${rows.length} variants: ${count('ok')} ok, ${count('fail')} failed, ${count('skipped')} skipped (device lacks a feature), ` +
    `${count('no-wgsl')} without WGSL, ${count('no-cases')} without cases for their dtypes`;
  return [line(head), ...body.map(line), summary].join('\n');
}
