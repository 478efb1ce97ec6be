/**
 * `tessera contract plan CONTRACT.json --shapes inputT=4x2880,... [--attrs ...] [--dtypes ...]
 *  [--tunables ...] [--device-profile FILE] [--json]`: resolves a kernel contract and prints the plan.
 * Standalone (until the main CLI mounts it): `npx tsx src/cli/contract.ts contract plan ...`.
 */
import { pathToFileURL } from 'node:url';
import { Command } from 'commander';
import type { DeviceCaps } from '../gpu/caps.ts';
import { resolveContract, type KernelContract, type KernelLookup, type PassSpec, type Plan } from '../contracts/index.ts';
import { loadContract } from '../node/contracts.ts';
import { loadCaps } from './device.ts';
import { CliArgumentError } from './errors.ts';

export { CliArgumentError };

export interface ContractPlanOptions {
  contract: string;
  /** `inputT=4x2880,routerT=4x32` */
  shapes: string;
  /** `k=4,activation_type=swiglu` (numeric values become numbers) */
  attrs?: string;
  /** `fc1T=uint8,...` */
  dtypes?: string;
  /** `workgroupSize=128,...` */
  tunables?: string;
  /** A device profile JSON (spec/device-profiles/*.json); without it the real device is used. */
  deviceProfile?: string;
  /** Capabilities to plan for (tests); overrides deviceProfile. */
  caps?: DeviceCaps;
}

export interface ContractPlanJson {
  variant: string;
  rejected: { variant: string; reason: string }[];
  intermediates: { id: string; bytes: number }[];
  passes: { name: string; shader: string; dispatch: [number, number, number] }[];
}

function pairs(text: string | undefined, flag: string): [string, string][] {
  if (text === undefined || text.trim() === '') return [];
  return text.split(',').map((item) => {
    const eq = item.indexOf('=');
    const key = item.slice(0, eq).trim();
    if (eq <= 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new CliArgumentError(`${flag}: expected name=value, got "${item}"`);
    return [key, item.slice(eq + 1).trim()];
  });
}

/** `inputT=4x2880,routerT=4x32` → { inputT: [4, 2880], routerT: [4, 32] }; `x=` is a scalar. */
export function parseShapes(text: string): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const [k, v] of pairs(text, '--shapes')) {
    if (k in out) throw new CliArgumentError(`--shapes: "${k}" given twice`);
    out[k] = v === '' ? [] : v.split(/[x×*]/).map((d) => {
      if (!/^\d+$/.test(d.trim())) throw new CliArgumentError(`--shapes: ${k}=${v}: dimensions are non-negative integers separated by "x" (e.g. ${k}=4x2880)`);
      return Number(d);
    });
  }
  return out;
}

/** `k=4,activation_type=swiglu` → { k: 4, activation_type: "swiglu" }. */
export function parseValues(text: string | undefined, flag: string): Record<string, number | string> {
  const out: Record<string, number | string> = {};
  for (const [k, v] of pairs(text, flag)) out[k] = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v) ? Number(v) : v;
  return out;
}

function hasKernelPasses(passes: readonly PassSpec[]): boolean {
  return passes.some((p) => p.kernel !== undefined || (p.passes !== undefined && hasKernelPasses(p.passes)));
}

async function registryLookup(c: KernelContract): Promise<KernelLookup | undefined> {
  if (!c.variants.some((v) => hasKernelPasses(v.passes))) return undefined;
  const { defaultRegistry } = await import('../node/registry.ts');
  const { registryLookup: lookup } = await import('../ops/runner.ts');
  return lookup(defaultRegistry());
}

const pad = (s: string, n: number) => s.padEnd(n);

/** The plan as text: chosen variant, why each higher-priority variant was rejected, intermediates, passes. */
export function formatPlanText(plan: Plan): string {
  const lines = [`${plan.contract} on ${plan.device}`, `variant: ${plan.variant} (priority ${plan.priority})`];
  if (plan.rejected.length) {
    lines.push('rejected (higher priority):');
    for (const r of plan.rejected) lines.push(`  ${r.variant} (priority ${r.priority}): ${r.reason}`);
  }
  const total = plan.intermediates.reduce((a, m) => a + m.bytes, 0);
  lines.push(`intermediates (${plan.intermediates.length}, ${total} bytes):`);
  const w = Math.max(0, ...plan.intermediates.map((m) => m.id.length));
  for (const m of plan.intermediates) lines.push(`  ${pad(m.id, w)}  ${pad(m.dtype, 7)}  ${pad(`[${m.shape.join(', ')}]`, 12)}  ${m.bytes} bytes`);
  lines.push(`passes (${plan.passes.length}):`);
  const pw = Math.max(0, ...plan.passes.map((p) => p.path.length));
  const nw = Math.max(0, ...plan.passes.map((p) => p.name.length));
  for (const p of plan.passes) {
    lines.push(`  ${pad(p.path, pw)}  ${pad(p.name, nw)}  ${p.shader ?? p.wgsl ?? p.kernel}  dispatch [${p.dispatch.join(', ')}]`);
  }
  return lines.join('\n');
}

export function planJson(plan: Plan): ContractPlanJson {
  return {
    variant: plan.variant,
    rejected: plan.rejected.map((r) => ({ variant: r.variant, reason: r.reason })),
    intermediates: plan.intermediates.map((m) => ({ id: m.id, bytes: m.bytes })),
    passes: plan.passes.map((p) => ({ name: p.name, shader: p.shader ?? p.wgsl ?? p.kernel!, dispatch: p.dispatch })),
  };
}

async function deviceCaps(opts: ContractPlanOptions): Promise<DeviceCaps> {
  if (opts.caps) return opts.caps;
  const { caps, close } = await loadCaps(opts.deviceProfile);
  close();
  return caps;
}

/** Resolves a contract for the given arguments; returns the JSON summary, the text form and the plan. */
export async function contractPlan(opts: ContractPlanOptions): Promise<{ json: ContractPlanJson; text: string; plan: Plan }> {
  if (!opts.shapes) throw new CliArgumentError('--shapes is required, e.g. --shapes inputT=4x2880,routerT=4x32');
  const shapes = parseShapes(opts.shapes);
  const attributes = parseValues(opts.attrs, '--attrs');
  const tunables = parseValues(opts.tunables, '--tunables');
  const dtypes = Object.fromEntries(Object.entries(parseValues(opts.dtypes, '--dtypes')).map(([k, v]) => [k, String(v)]));
  const contract = loadContract(opts.contract);
  const device = await deviceCaps(opts);
  const kernels = await registryLookup(contract);
  const plan = resolveContract(contract, { shapes, attributes, tunables, dtypes, device, source: opts.contract, ...(kernels ? { kernels } : {}) });
  return { json: planJson(plan), text: formatPlanText(plan), plan };
}

/** Adds `contract plan` to a commander program. */
export function registerContractCommands(program: Command): Command {
  const contract = program.command('contract').description('kernel contracts: resolve and inspect');
  contract
    .command('plan')
    .description('choose a variant of a kernel contract for shapes/attributes on a device and print its passes')
    .argument('<contract>', 'contract JSON file (e.g. spec/qmoe.contract.json)')
    .requiredOption('--shapes <list>', 'input shapes by contract input name: inputT=4x2880,routerT=4x32,...')
    .option('--attrs <list>', 'attributes: k=4,activation_type=swiglu,... (numeric values become numbers)')
    .option('--dtypes <list>', 'input dtypes: fc1T=uint8,... (default: the type constraint when it allows one type)')
    .option('--tunables <list>', 'tunables: workgroupSize=128,...')
    .option('--device-profile <file>', 'plan for a device profile JSON instead of the real device')
    .option('--json', 'print the plan as JSON')
    // Errors propagate to the caller (src/cli/main.ts prints "error: ..." and exits with code 1).
    .action(async (file: string, o: { shapes: string; attrs?: string; dtypes?: string; tunables?: string; deviceProfile?: string; json?: boolean }) => {
      const r = await contractPlan({ contract: file, ...o });
      process.stdout.write(`${o.json ? JSON.stringify(r.json, null, 2) : r.text}\n`);
    });
  return program;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const program = new Command('tessera');
  registerContractCommands(program);
  try {
    await program.parseAsync(process.argv);
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    process.exitCode = 1;
  }
}
