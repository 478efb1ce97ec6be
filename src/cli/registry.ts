/** `tessera kernels list` and `tessera kernels lint`. */
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { RegistryError } from '../registry/errors.ts';
import { DEFAULT_REGISTRY_PATH, loadRegistry, wgslExists } from '../node/registry.ts';
import type { Registry } from '../registry/types.ts';
import type { DeviceCaps } from '../gpu/caps.ts';
import { loadCaps } from './device.ts';

export interface VariantListing {
  id: string;
  variant: string;
  wgsl: string;
  entryPoint: string;
  workgroup: number[];
  requires: string[];
  reachability: string;
  runsOnThisDevice: boolean;
  missingFeatures: string[];
  wgslExists: boolean;
  entryPointExists: boolean;
}

export interface OperationListing {
  operation: string;
  description: string;
  variants: VariantListing[];
}

const entryCache = new Map<string, string>();
async function hasEntryPoint(file: string, entry: string): Promise<boolean> {
  if (!wgslExists(file)) return false;
  let text = entryCache.get(file);
  if (text === undefined) {
    const { readFileSync } = await import('node:fs');
    const { wgslPath } = await import('../node/registry.ts');
    text = readFileSync(wgslPath(file), 'utf8');
    entryCache.set(file, text);
  }
  return new RegExp(`@compute[^;{]*?fn\\s+${entry}\\s*\\(`, 's').test(text);
}

export async function listKernels(reg: Registry, caps: DeviceCaps): Promise<OperationListing[]> {
  const out: OperationListing[] = [];
  for (const op of reg.operations.values()) {
    const variants: VariantListing[] = [];
    for (const v of op.variants.values()) {
      const missing = v.requires.filter((f) => !caps.features.has(f));
      variants.push({
        id: v.id,
        variant: v.name,
        wgsl: v.wgsl,
        entryPoint: v.entryPoint,
        workgroup: v.workgroup,
        requires: v.requires,
        reachability: v.reachability.status,
        runsOnThisDevice: missing.length === 0,
        missingFeatures: missing,
        wgslExists: wgslExists(v.wgsl),
        entryPointExists: await hasEntryPoint(v.wgsl, v.entryPoint),
      });
    }
    out.push({ operation: op.name, description: op.description, variants });
  }
  return out;
}

function pad(s: string, n: number): string {
  return s.length >= n ? s : s + ' '.repeat(n - s.length);
}

export function registerRegistryCommands(program: Command): void {
  const kernels = program.command('kernels').description('inspect and validate the kernel registry');
  kernels
    .command('list')
    .description('operations and variants: requirements, whether this device can run each, whether its WGSL exists')
    .option('--registry <file>', 'registry JSON', DEFAULT_REGISTRY_PATH)
    .option('--device-profile <file>', 'plan for a device profile JSON instead of the real device')
    .option('--json', 'print a JSON array of operations, each with a variants array')
    .action(async (opts: { registry: string; deviceProfile?: string; json?: boolean }) => {
      const reg = loadRegistry(opts.registry);
      const { caps, close } = await loadCaps(opts.deviceProfile);
      try {
        const ops = await listKernels(reg, caps);
        if (opts.json) {
          process.stdout.write(JSON.stringify(ops, null, 2) + '\n');
          return;
        }
        let nv = 0;
        let runnable = 0;
        let implemented = 0;
        for (const op of ops) {
          console.log(`${op.operation}  ${op.description ? `- ${op.description}` : ''}`);
          for (const v of op.variants) {
            nv++;
            if (v.runsOnThisDevice) runnable++;
            if (v.entryPointExists) implemented++;
            const dev = v.runsOnThisDevice ? 'runs here' : `needs ${v.missingFeatures.join('+')}`;
            const wgsl = v.entryPointExists ? 'wgsl ok' : v.wgslExists ? 'entry missing' : 'no wgsl';
            console.log(`  ${pad(v.variant, 36)} ${pad(v.requires.join(',') || '-', 22)} ${pad(dev, 26)} ${pad(wgsl, 14)} ${v.reachability}`);
          }
        }
        console.log(`\n${ops.length} operations, ${nv} variants; ${runnable} can run on this device; ${implemented} implemented (WGSL entry point present)`);
      } finally {
        close();
      }
    });
  kernels
    .command('lint')
    .description('validate the registry against its JSON Schema and layout rules; report irregularities (exit 1 on errors)')
    .option('--registry <file>', 'registry JSON', DEFAULT_REGISTRY_PATH)
    .option('--strict', 'also require every variant\'s WGSL file to exist in src/kernels/')
    .option('--json', 'print {errors, warnings} as JSON')
    .action((opts: { registry: string; strict?: boolean; json?: boolean }) => {
      if (!existsSync(opts.registry)) {
        console.error(`error: registry file ${opts.registry} does not exist`);
        process.exitCode = 1;
        return;
      }
      try {
        const reg = loadRegistry(opts.registry, { strict: opts.strict });
        const nv = [...reg.operations.values()].reduce((n, o) => n + o.variants.size, 0);
        if (opts.json) {
          process.stdout.write(JSON.stringify({ file: reg.file, operations: reg.operations.size, variants: nv, errors: [], warnings: reg.warnings }, null, 2) + '\n');
          return;
        }
        for (const w of reg.warnings) console.log(`warning: ${w.where}: ${w.message}`);
        console.log(`${reg.file}: ${reg.operations.size} operations, ${nv} variants, 0 errors, ${reg.warnings.length} warnings`);
      } catch (e) {
        if (!(e instanceof RegistryError)) throw e;
        if (opts.json) {
          process.stdout.write(JSON.stringify({ file: e.file, errors: e.problems.filter((p) => p.level === 'error'), warnings: [] }, null, 2) + '\n');
        } else {
          for (const p of e.problems) console.error(`${p.level}: ${p.where}: ${p.message}`);
          console.error(`${e.file}: ${e.problems.length} error${e.problems.length === 1 ? '' : 's'}`);
        }
        process.exitCode = 1;
      }
    });
}
