/**
 * `tessera kernels reach [--device-profile FILE ...] [--model-config FILE ...] [--json] [--write-docs [FILE]]`:
 * evaluates every op contract and the QMoE contracts over device profiles x model configs x shapes (prefill of 1,
 * 16, 512 and 4096 tokens and decode, in 1k and 32k KV caches) and reports, per registry variant, which (device,
 * model, shape) selects it, compared with the registry's `reachability` records. Defaults: every profile in
 * spec/device-profiles/ and the models of spec/reach-models.json. `--write-docs` regenerates docs/kernel-support.md.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import type { KernelContract } from '../contracts/index.ts';
import { loadContract } from '../node/contracts.ts';
import { capsFromJson, type DeviceProfileJson } from '../gpu/caps.ts';
import { decoderConfigFromHF } from '../models/config.ts';
import { OP_CONTRACTS } from '../ops/contracts.generated.ts';
import { opContract } from '../ops/runner.ts';
import { reachReport, type ReachReport } from '../registry/reach.ts';
import { defaultRegistry } from '../node/registry.ts';
import type { Registry } from '../registry/types.ts';
import { evaluateReach, type ReachContract, type ReachDevice, type ReachModel, type ReachOptions } from '../runtime/reach-eval.ts';
import { CliArgumentError } from './errors.ts';

/** The repository root: shipped profiles, the models list and the QMoE contracts are read from here, whatever the cwd. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const PROFILE_DIR = 'spec/device-profiles';
export const REACH_MODELS = 'spec/reach-models.json';
export const QMOE_CONTRACTS = [
  { name: 'qmoe', file: 'spec/qmoe.contract.json' },
  { name: 'qmoe.v2', file: 'spec/qmoe.v2.contract.json' },
];

function readJson(file: string, flag: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new CliArgumentError(`${flag} ${file}: cannot read the file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CliArgumentError(`${flag} ${file}: not valid JSON (${(e as Error).message})`);
  }
}

/** A device profile file as a reach device: named by its file name, with its `provenance` field. */
export function loadReachDevice(file: string): ReachDevice {
  const json = readJson(file, '--device-profile') as DeviceProfileJson & { provenance?: unknown };
  let caps;
  try {
    caps = capsFromJson(json, `--device-profile ${file}`);
  } catch (e) {
    throw new CliArgumentError((e as Error).message);
  }
  const provenance = json.provenance === 'measured' || json.provenance === 'modelled' ? json.provenance : 'unknown';
  return { name: basename(file).replace(/\.json$/, ''), caps, provenance, file };
}

/** Every profile of spec/device-profiles/, sorted by name. */
export function defaultDeviceFiles(root = REPO_ROOT): string[] {
  const dir = join(root, PROFILE_DIR);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => join(dir, f));
}

/** An HF config.json as a reach model, named by its folder (or file name when the folder says nothing). */
export function loadReachModel(file: string): ReachModel {
  const raw = readJson(file, '--model-config');
  let config;
  try {
    config = decoderConfigFromHF(raw as Record<string, unknown>, file);
  } catch (e) {
    throw new CliArgumentError(`--model-config ${file}: ${(e as Error).message}`);
  }
  const base = basename(file);
  const name = base === 'config.json' ? basename(dirname(file)) || file : base.replace(/\.json$/, '');
  return { name, config, file };
}

/** The models of spec/reach-models.json: config files of the repository and inline HF configs (bench shapes, MoE). */
export function defaultReachModels(root = REPO_ROOT): ReachModel[] {
  const list = readJson(join(root, REACH_MODELS), 'models list') as { models: { name: string; file?: string; config?: Record<string, unknown> }[] };
  return list.models.map((m) => {
    if (m.file) return { ...loadReachModel(join(root, m.file)), name: m.name, file: m.file };
    return { name: m.name, config: decoderConfigFromHF(m.config!, `${REACH_MODELS} (${m.name})`) };
  });
}

/** Every op contract (by op name) and the QMoE contracts: what the report lists as naming registry kernels. */
export function reachContracts(root = REPO_ROOT): { ops: { name: string; contract: KernelContract }[]; moe: ReachContract[] } {
  const ops = Object.keys(OP_CONTRACTS).sort().map((name) => ({ name, contract: opContract(name) }));
  const moe = QMOE_CONTRACTS.map((c) => ({ name: c.name, contract: loadContract(join(root, c.file)), source: c.file }));
  return { ops, moe };
}

const WGSL_DIR = 'src/kernels';
const entryCache = new Map<string, string | null>();
/** Whether the registry variant's WGSL file exists here with its entry point. */
export function variantHasWgsl(reg: Registry, id: string, root = REPO_ROOT): boolean {
  const dot = id.indexOf('.');
  const v = reg.operations.get(id.slice(0, dot))?.variants.get(id.slice(dot + 1));
  if (!v) return false;
  let code = entryCache.get(v.wgsl);
  if (code === undefined) {
    const f = join(root, WGSL_DIR, v.wgsl);
    code = existsSync(f) ? readFileSync(f, 'utf8') : null;
    entryCache.set(v.wgsl, code);
  }
  return code !== null && new RegExp(`@compute[^;{]*?fn\\s+${v.entryPoint}\\s*\\(`, 's').test(code.replace(/\/\/.*$/gm, ''));
}

export interface KernelsReachOptions extends ReachOptions {
  deviceProfiles?: string[];
  modelConfigs?: string[];
  root?: string;
}

/** Loads the profiles and configs (defaults: all shipped), evaluates, and builds the report. */
export function kernelsReach(opts: KernelsReachOptions = {}): ReachReport {
  const root = opts.root ?? REPO_ROOT;
  const devices = (opts.deviceProfiles?.length ? opts.deviceProfiles : defaultDeviceFiles(root)).map(loadReachDevice);
  const models = opts.modelConfigs?.length ? opts.modelConfigs.map(loadReachModel) : defaultReachModels(root);
  const names = new Set<string>();
  for (const d of devices) {
    if (names.has(d.name)) throw new CliArgumentError(`--device-profile ${d.file}: a second profile named "${d.name}"`);
    names.add(d.name);
  }
  const registry = opts.registry ?? defaultRegistry();
  const { ops, moe } = reachContracts(root);
  const ev = evaluateReach(devices, models, { ...opts, registry, moeContracts: opts.moeContracts ?? moe });
  return reachReport(ev, registry, [...ops, ...moe], (id) => variantHasWgsl(registry, id, root));
}

const pad = (s: string, n: number) => (s.length >= n ? s : s + ' '.repeat(n - s.length));
const list = (xs: readonly string[], max = 4) => (xs.length <= max ? xs.join(', ') : `${xs.slice(0, max).join(', ')} +${xs.length - max}`);

/** The report as text: summary per device, selected registry and contract variants, unsupported requests, disagreements. */
export function formatReach(r: ReachReport, opts: { unsupportedLines?: number } = {}): string {
  const s = r.summary;
  const L: string[] = [];
  L.push(`kernels reach: ${r.devices.length} device profiles x ${r.models.length} model configs x ${r.quants.length} weight formats x ${r.shapes.length} shapes (${r.shapes.join('; ')})`);
  L.push('');
  L.push(`${pad('device', 20)} ${pad('provenance', 10)} ${pad('requests', 9)} ${pad('unsupported', 12)} ${pad('registry variants', 18)} contract variants`);
  for (const d of s.perDevice) L.push(`${pad(d.device, 20)} ${pad(d.provenance, 10)} ${pad(String(d.requests), 9)} ${pad(String(d.unsupported), 12)} ${pad(String(d.registryVariants), 18)} ${d.contractVariants}`);
  L.push('');
  L.push(`registry variants selected: ${s.registryVariantsSelected} of ${s.registryVariants}; contract variants selected: ${s.contractVariantsSelected} of ${s.contractVariants}`);
  L.push(`disagreements with the registry's reachability records: ${s.disagreements.evaluationOnly} selected but recorded as not reached by a model, ${s.disagreements.registryOnly} recorded as reached by a model (pinned / model-selectable) but not selected`);
  L.push('');
  L.push('registry variants selected:');
  const sel = r.variants.filter((v) => v.selected);
  const w = Math.max(8, ...sel.map((v) => v.id.length));
  L.push(`  ${pad('variant', w)}  ${pad('registry', 16)}  ${pad('devices', 40)}  models`);
  for (const v of sel) L.push(`  ${pad(v.id, w)}  ${pad(v.registryStatus, 16)}  ${pad(v.devices.join(', '), 40)}  ${list(v.models)}`);
  L.push('');
  L.push('contract variants (registry kernels or templates they run; devices where a model selects them):');
  const cw = Math.max(8, ...r.contractVariants.map((c) => c.id.length));
  for (const c of r.contractVariants) {
    const runs = [...c.kernels, ...c.templates].join(', ') || '-';
    L.push(`  ${pad(c.id, cw)}  ${pad(c.devices.length ? c.devices.join(', ') : 'not selected', 40)}  ${runs}`);
  }
  L.push('');
  const max = opts.unsupportedLines ?? 30;
  L.push(`requests no variant accepts, or that bind a tensor over a device limit (${r.unsupported.length} distinct${r.unsupported.length > max ? `; first ${max}, --json lists all` : ''}):`);
  for (const u of r.unsupported.slice(0, max)) {
    L.push(`  ${u.device} / ${u.model} / ${u.quant}${u.op ? ` / ${u.op}` : ''}${u.shapes.length ? ` [${list(u.shapes, 3)}]` : ''}: ${u.reason.split('\n')[0]!.slice(0, 220)}`);
  }
  L.push('');
  L.push(`selected, but the registry records no model reaching it (${r.disagreements.evaluationOnly.length}):`);
  for (const d of r.disagreements.evaluationOnly) L.push(`  ${d.variant}: ${d.detail}`);
  L.push('');
  L.push(`recorded as reached by a model, but not selected (${r.disagreements.registryOnly.length}):`);
  for (const d of r.disagreements.registryOnly) L.push(`  ${d.variant}: ${d.detail}`);
  return L.join('\n');
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

/** Adds `reach` to the `kernels` command group (src/cli/registry.ts makes the group). */
export function registerKernelsReach(kernels: Command): void {
  kernels
    .command('reach')
    .description('evaluate every contract over device profiles x model configs x shapes; report which selects each registry variant and where the registry reachability records disagree')
    .option('--device-profile <file>', `a device profile JSON (repeatable; default: every profile in ${PROFILE_DIR}/)`, collect)
    .option('--model-config <file>', `an HF config.json (repeatable; default: the models of ${REACH_MODELS})`, collect)
    .option('--json', 'print the report as JSON')
    .option('--write-docs [file]', 'also regenerate the kernel support document (default docs/kernel-support.md), keeping its device columns')
    .action(async (o: { deviceProfile?: string[]; modelConfig?: string[]; json?: boolean; writeDocs?: string | true }) => {
      const report = kernelsReach({ deviceProfiles: o.deviceProfile, modelConfigs: o.modelConfig });
      process.stdout.write(`${o.json ? JSON.stringify(report, null, 2) : formatReach(report)}\n`);
      if (o.writeDocs !== undefined) {
        const { SUPPORT_DOC } = await import('../selftest/support.ts');
        const { writeSupportDocument } = await import('../node/support-doc.ts');
        const file = o.writeDocs === true ? SUPPORT_DOC : o.writeDocs;
        await writeSupportDocument(file, { reach: report });
        console.error(`wrote ${file} (every registry variant: WGSL, harness cases, device columns, contracts that reach it)`);
      }
    });
}
