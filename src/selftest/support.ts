/**
 * Support mode: the coverage table (variant x device) of the op-test harness, written to docs/kernel-support.md.
 * Each run fills the column of the device it runs on and keeps the other devices' columns already in the file, so
 * the CPU lane and the GPU lane each add their own column.
 */
import notRecoverable from './not-recoverable.json' with { type: 'json' };
import type { TesseraDevice } from '../gpu/device.ts';
import { defaultRegistry, readWgslSync } from '../registry/bundled.ts';
import type { ReachReport } from '../registry/reach.ts';
import type { KernelVariant, Registry } from '../registry/types.ts';
import { REFERENCE_OPS, type ReferenceOp } from '../reference/ops.ts';
import { OP_CASES } from './cases.ts';
import { runAllOps, wgslEntryPoints, type HarnessOptions, type VariantReport } from './harness.ts';

export const SUPPORT_DOC = 'docs/kernel-support.md';
const BEGIN = '<!-- support-table:begin -->';
const END = '<!-- support-table:end -->';

export interface SupportColumn {
  /** short device name: "vendor architecture" */
  device: string;
  /** describeAdapter-style line for the legend */
  adapter: string;
  /** variant id -> cell text */
  cells: Map<string, string>;
}

export function deviceName(dev: TesseraDevice): string {
  const a = dev.caps.adapterInfo;
  return [a.vendor, a.architecture || a.device].filter(Boolean).join(' ') || 'unknown';
}

/** The text of one cell: ok / FAIL with the first problem / skipped, no WGSL, no cases with the reason. */
export function supportCell(r: VariantReport): string {
  const n = r.cases.length;
  const passed = r.cases.filter((c) => c.pass).length;
  switch (r.status) {
    case 'ok':
      return `ok (${n} cases)`;
    case 'fail': {
      const bad = r.cases.find((c) => !c.pass);
      return bad ? `FAIL ${passed}/${n}: [${bad.case}] ${bad.problems[0]}` : `FAIL: ${r.reason}`;
    }
    case 'skipped':
      return `skipped: ${r.reason}`;
    case 'no-wgsl':
      return `no WGSL: ${r.reason}`;
    case 'no-cases':
      return `no cases: ${r.reason}`;
  }
}

export async function supportColumn(dev: TesseraDevice, opts: HarnessOptions = {}): Promise<SupportColumn> {
  return supportColumnOf(dev, await runAllOps(dev, opts));
}

/** This device's column from harness reports already run (e.g. by `tessera selftest --support`). */
export function supportColumnOf(dev: TesseraDevice, reports: readonly VariantReport[]): SupportColumn {
  const a = dev.caps.adapterInfo;
  const adapter = [deviceName(dev), a.description && `(${a.description})`, a.subgroupMinSize !== undefined && `subgroups ${a.subgroupMinSize}-${a.subgroupMaxSize}`, `features: ${[...dev.caps.features].sort().join(', ')}`]
    .filter(Boolean)
    .join(' ');
  return { device: deviceName(dev), adapter, cells: new Map(reports.map((r) => [r.variant, supportCell(r)])) };
}

const esc = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const unesc = (s: string) => s.replace(/\\\|/g, '|');

/** Split a markdown table row on unescaped pipes. */
function cellsOf(line: string): string[] {
  const inner = line.trim().replace(/^\|/, '').replace(/\|$/, '');
  return inner.split(/(?<!\\)\|/).map((c) => unesc(c.trim()));
}

/** Columns of the table that are not a device's (the registry, the harness and the reach evaluation fill them). */
const FIXED_COLUMNS = ['variant', 'WGSL entry point', 'requires', 'WGSL', 'harness cases', 'registry reachability', 'contract variants naming it', 'selected by models on (tessera kernels reach)'];
const REACH_COLUMNS = ['contract variants naming it', 'selected by models on (tessera kernels reach)'] as const;

function tableLines(md: string): string[] {
  const start = md.indexOf(BEGIN);
  const end = md.indexOf(END);
  if (start < 0 || end < 0) return [];
  return md.slice(start + BEGIN.length, end).split('\n').filter((l) => l.trim().startsWith('|'));
}

/** Columns already in a support doc (to merge with a new run). */
export function parseSupportDoc(md: string): SupportColumn[] {
  const lines = tableLines(md);
  if (lines.length < 2) return [];
  const head = cellsOf(lines[0]!);
  const deviceAt = head.map((h, i) => [h, i] as const).filter(([h]) => !FIXED_COLUMNS.includes(h));
  const cols: SupportColumn[] = deviceAt.map(([device]) => ({ device, adapter: '', cells: new Map() }));
  for (const l of lines.slice(2)) {
    const c = cellsOf(l);
    const id = c[0]!.replace(/`/g, '');
    cols.forEach((col, i) => {
      const v = c[deviceAt[i]![1]];
      if (v) col.cells.set(id, v);
    });
  }
  const legend = /^- \*\*(.+?)\*\*: (.*)$/gm;
  for (const m of md.matchAll(legend)) {
    const col = cols.find((c) => c.device === m[1]);
    if (col) col.adapter = m[2]!;
  }
  return cols;
}

/** The reach cells (contract variants naming each variant; devices and models selecting it) of a support doc, by variant. */
export function parseReachCells(md: string): Map<string, { named: string; selected: string }> {
  const out = new Map<string, { named: string; selected: string }>();
  const lines = tableLines(md);
  if (lines.length < 2) return out;
  const head = cellsOf(lines[0]!);
  const [ni, si] = REACH_COLUMNS.map((c) => head.indexOf(c));
  if (ni! < 0 || si! < 0) return out;
  for (const l of lines.slice(2)) {
    const c = cellsOf(l);
    out.set(c[0]!.replace(/`/g, ''), { named: c[ni!] ?? '', selected: c[si!] ?? '' });
  }
  return out;
}

/** Registry variants left without WGSL because the registry does not say what they compute, with the reason. */
const NOT_RECOVERABLE: Readonly<Record<string, string>> = (notRecoverable as { variants: Record<string, string> }).variants;

/** Whether the variant's WGSL file and entry point exist (bundled kernel sources). */
export function wgslCell(v: KernelVariant): string {
  const code = v.source ?? readWgslSync(v.wgsl);
  if (code === undefined) return NOT_RECOVERABLE[v.id] ? 'no: not recoverable from the registry (below)' : 'no: file missing';
  return wgslEntryPoints(code).has(v.entryPoint) ? 'yes' : 'no: entry point missing';
}

/** How many op-test harness cases apply to the variant, or why none do. */
export function harnessCell(op: string, v: KernelVariant): string {
  if (!(REFERENCE_OPS as readonly string[]).includes(op)) return 'none: no CPU reference for the operation';
  const spec = OP_CASES[op as ReferenceOp];
  const nc = spec.notCovered(v);
  if (nc) return `none: ${nc}`;
  const cases = spec.cases.filter((c) => !c.only || c.only(v));
  const heavy = cases.filter((c) => c.heavy).length;
  return cases.length ? `${cases.length}${heavy ? ` (${heavy} heavy: GPU lane)` : ''}` : 'none';
}

const MAX_MODELS = 4;
/** The reach cells of a variant from a reach report. */
export function reachCells(r: ReachReport, id: string): { named: string; selected: string } {
  const v = r.variants.find((x) => x.id === id);
  if (!v) return { named: '-', selected: '-' };
  const named = v.namedBy.length ? v.namedBy.map((c) => `\`${c}\``).join(', ') : 'none';
  if (!v.selected) return { named, selected: 'not selected' };
  const parts = v.devices.map((d) => {
    const models = [...new Set(v.selectedBy.filter((s) => s.device === d).map((s) => s.model))];
    return `${d} (${models.length > MAX_MODELS ? `${models.slice(0, MAX_MODELS).join(', ')} +${models.length - MAX_MODELS}` : models.join(', ')})`;
  });
  return { named, selected: parts.join('; ') };
}

export interface SupportDocOptions {
  registry?: Registry;
  /** A reach report to fill the reach columns from; without it, the cells already in the doc are kept. */
  reach?: ReachReport;
  /** Reach cells kept from the doc being rewritten (parseReachCells). */
  reachCells?: Map<string, { named: string; selected: string }>;
  /** The reach section (summary) kept from the doc being rewritten. */
  reachSummary?: string;
}

const REACH_BEGIN = '<!-- reach-summary:begin -->';
const REACH_END = '<!-- reach-summary:end -->';

/** The reach summary lines of the doc (per device, disagreements), from a report. */
export function reachSummary(r: ReachReport): string {
  const s = r.summary;
  const lines = [
    `Reach (\`tessera kernels reach\`, ${r.devices.length} device profiles x ${r.models.length} model configs x ${r.quants.length} weight formats x ${r.shapes.length} shapes: ${r.shapes.join('; ')}):`,
    '',
    '| device profile | provenance | requests | no variant, or a tensor over a binding limit | registry variants selected | contract variants selected |',
    '|---|---|---|---|---|---|',
    ...s.perDevice.map((d) => `| ${d.device} | ${d.provenance} | ${d.requests} | ${d.unsupported} | ${d.registryVariants} | ${d.contractVariants} |`),
    '',
    `Registry variants selected by some device x model x shape: ${s.registryVariantsSelected} of ${s.registryVariants}; contract variants: ${s.contractVariantsSelected} of ${s.contractVariants}.`,
    `Disagreements with the registry's \`reachability\` records: ${s.disagreements.evaluationOnly} variants selected that the registry records as not reached by a model (${r.disagreements.evaluationOnly.map((d) => `\`${d.variant}\``).join(', ') || 'none'}); ${s.disagreements.registryOnly} recorded as pinned or model-selectable that nothing evaluated selects (\`tessera kernels reach\` lists them with the reason).`,
  ];
  return lines.join('\n');
}

/** The reach section of a support doc already written (kept when only a device column is rewritten). */
export function keptSection(md: string): string | undefined {
  const a = md.indexOf(REACH_BEGIN);
  const b = md.indexOf(REACH_END);
  return a >= 0 && b > a ? md.slice(a + REACH_BEGIN.length, b).trim() : undefined;
}

export function renderSupportDoc(columns: SupportColumn[], registryOrOpts: Registry | SupportDocOptions = {}): string {
  const opts: SupportDocOptions = 'operations' in registryOrOpts ? { registry: registryOrOpts as Registry } : (registryOrOpts as SupportDocOptions);
  const registry = opts.registry ?? defaultRegistry();
  const reach = (id: string) => (opts.reach ? reachCells(opts.reach, id) : (opts.reachCells?.get(id) ?? { named: 'not evaluated', selected: 'not evaluated' }));
  const rows: string[] = [];
  const fixed = ['variant', 'WGSL', 'requires', 'harness cases', 'registry reachability', ...REACH_COLUMNS];
  const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
  rows.push(row([...fixed, ...columns.map((c) => esc(c.device))]));
  rows.push(`|${[...fixed, ...columns].map(() => '---').join('|')}|`);
  for (const operation of registry.operations.values()) {
    for (const v of operation.variants.values()) {
      const cells = columns.map((c) => esc(c.cells.get(v.id) ?? 'not run'));
      const r = reach(v.id);
      const wgsl = `${wgslCell(v)} (${v.wgsl} ${v.entryPoint})`;
      rows.push(row([`\`${v.id}\``, esc(wgsl), v.requires.join(', ') || '-', esc(harnessCell(operation.name, v)), v.reachability.status, esc(r.named), esc(r.selected), ...cells]));
    }
  }
  const summary = opts.reach ? reachSummary(opts.reach) : (opts.reachSummary ?? 'Reach: not evaluated yet (`tessera kernels reach --write-docs`).');
  return [
    '# Kernel support',
    '',
    'Every variant of the kernel registry (`spec/kernel-registry.json`). Regenerate the whole document with',
    '`npm run support:reach` (`tessera kernels reach --write-docs`: WGSL, harness cases, registry and reach columns; the',
    "device columns already here are kept). A device's column comes from running the op-test harness on it: `npm run",
    "support` (`tessera selftest --support`; `src/selftest/support.ts`) replaces the column of the device it runs on and",
    'keeps the others (and the reach columns).',
    '',
    '- WGSL: whether `src/kernels/<file>` exists with the entry point the registry names.',
    '- harness cases: op-test harness cases (`src/selftest/cases.ts`) that apply to the variant, or why none do.',
    "- registry reachability: the registry's own `reachability.status` (copied data: pinned, model-selectable, selectable, unused).",
    '- contract variants naming it: op contract variants (`src/ops/contracts/`) whose passes run this kernel.',
    '- selected by models on: device profiles (`spec/device-profiles/`) on which some model config x weight format x shape of',
    '  `tessera kernels reach` selects it, with the models.',
    '',
    'Device columns:',
    '',
    '- `ok (n cases)`: every case matched the CPU reference (NaN/Inf, unwritten outputs, guard regions, max error, NMSE).',
    '- `FAIL k/n`: the first failing case and its first problem.',
    "- `skipped`: the WGSL exists but the device lacks a required feature (the device's lane must run it).",
    '- `no WGSL`: the file or the entry point the registry names does not exist yet.',
    '- `no cases`: the WGSL exists but the harness has no cases for its dtypes / bindings yet.',
    '- `FAIL: no single-pass variant ...`: the harness covers the kernel but no op contract variant runs it.',
    '- `not run`: the device of that column has not run this variant (no CPU reference, or newer than its run).',
    '',
    'Devices:',
    '',
    ...columns.map((c) => `- **${c.device}**: ${c.adapter}`),
    '',
    REACH_BEGIN,
    summary,
    REACH_END,
    '',
    BEGIN,
    ...rows,
    END,
    '',
    '## Variants whose meaning the registry does not give',
    '',
    'These have no WGSL on purpose: the registry names them but leaves out what a faithful kernel and CPU reference need',
    '(`src/selftest/not-recoverable.json`).',
    '',
    ...Object.entries(NOT_RECOVERABLE).map(([id, why]) => `- \`${id}\`: ${why}`),
    '',
  ].join('\n');
}
