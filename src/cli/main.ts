/** The `tessera` CLI. Subcommands live in one module each; this file wires them up. */
import '../node/host.ts';
import { Command } from 'commander';
import { capsToJson } from '../gpu/caps.ts';
import { registerKernelsReach } from './kernels.ts';
import { registerEmbedCommands } from './embed.ts';
import { registerModelCommands } from './model.ts';
import { registerRegistryCommands } from './registry.ts';
import { registerServeCommand } from './serve.ts';
import { registerWebCommand } from './web.ts';

function registerDeviceCommands(program: Command): void {
  program
    .command('devices')
    .description('show the WebGPU adapter Tessera uses: features, limits, subgroup sizes, subgroup-matrix configs')
    .option('--json', 'print { "adapterInfo": {...}, "features": [...], "limits": {...} }')
    .action(async (opts: { json?: boolean }) => {
      const { createDevice, describeAdapter } = await import('../gpu/device.ts');
      const dev = await createDevice();
      try {
        const json = capsToJson(dev.caps);
        if (opts.json) {
          process.stdout.write(JSON.stringify(json, null, 2) + '\n');
          return;
        }
        const a = json.adapterInfo;
        console.log(`adapter:   ${describeAdapter(dev.caps)}`);
        console.log(`vendor:    ${a.vendor || '-'}   architecture: ${a.architecture || '-'}   device: ${a.device || '-'}`);
        console.log(`subgroups: ${a.subgroupMinSize ?? '-'}..${a.subgroupMaxSize ?? '-'}`);
        console.log(`features:  ${json.features.join(', ')}`);
        const sm = a.subgroupMatrixConfigs;
        console.log(
          `subgroup-matrix configs: ${sm.length ? sm.map((c) => `${c.componentType}->${c.resultComponentType} ${c.M}x${c.N}x${c.K}`).join(', ') : 'none'}`,
        );
        const keyLimits = [
          'maxBufferSize',
          'maxStorageBufferBindingSize',
          'maxComputeWorkgroupStorageSize',
          'maxComputeInvocationsPerWorkgroup',
          'maxComputeWorkgroupSizeX',
          'maxComputeWorkgroupsPerDimension',
          'maxStorageBuffersPerShaderStage',
        ];
        console.log('limits:');
        for (const k of keyLimits) console.log(`  ${k.padEnd(36)} ${json.limits[k]}`);
        console.log(`  (${Object.keys(json.limits).length} limits in all; --json prints every one)`);
      } finally {
        dev.destroy();
      }
    });
}

function registerSelfTest(program: Command): void {
  program
    .command('selftest')
    .description('run every implemented kernel on this device against its CPU reference and print a table')
    .option('--filter <text>', 'only variants whose id contains this text')
    .option('--json', 'print the rows as JSON')
    .option(
      '--support [file]',
      "also write this device's column of the coverage table (variant x device) to a markdown file, keeping the other devices' columns (default docs/kernel-support.md; with --filter only those cells change)",
    )
    .action(async (opts: { filter?: string; json?: boolean; support?: string | true }) => {
      const { createDevice, describeAdapter } = await import('../gpu/device.ts');
      const { runSelfTestReports, formatSelfTest, toRow } = await import('../selftest/selftest.ts');
      const dev = await createDevice();
      try {
        const reports = await runSelfTestReports(dev, { filter: opts.filter });
        const rows = reports.map(toRow);
        if (opts.json) process.stdout.write(JSON.stringify({ adapter: describeAdapter(dev.caps), rows }, null, 2) + '\n');
        else console.log(`adapter: ${describeAdapter(dev.caps)}\n${formatSelfTest(rows)}`);
        if (opts.support !== undefined) {
          const { SUPPORT_DOC, deviceName, supportColumnOf } = await import('../selftest/support.ts');
          const { writeSupportColumn } = await import('../node/support-doc.ts');
          const file = opts.support === true ? SUPPORT_DOC : opts.support;
          await writeSupportColumn(file, supportColumnOf(dev, reports), { merge: opts.filter !== undefined });
          console.error(`wrote the "${deviceName(dev)}" column of ${file} (${reports.length} variants)`);
        }
        if (rows.some((r) => r.status === 'fail')) process.exitCode = 1;
      } finally {
        dev.destroy();
      }
    });
}

function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('the main job on the shipped default: show the device, self-test every implemented kernel, generate text from models/default')
    .option('--prompt <text>', 'prompt for the shipped model', 'And it came to pass')
    .option('--max-tokens <n>', 'tokens to generate', '48')
    .option('--skip-selftest', 'only generate text')
    .action(async (opts: { prompt: string; maxTokens: string; skipSelftest?: boolean }) => {
      const { describeAdapter } = await import('../gpu/device.ts');
      const { loadWithProgress, DEFAULT_MODEL } = await import('./model.ts');
      const { requireTokenizer } = await import('../models/load.ts');
      const { generateTokens } = await import('../runtime/generate.ts');
      const { dev, model } = await loadWithProgress(DEFAULT_MODEL, undefined, true);
      try {
        const caps = dev.caps;
        console.log(`device: ${describeAdapter(caps)}; features: ${[...caps.features].sort().join(', ')}`);
        if (!opts.skipSelftest) {
          const { runSelfTest, formatSelfTest } = await import('../selftest/selftest.ts');
          const rows = await runSelfTest(dev, {});
          console.log(`\nkernel self-test (every implemented kernel on this device vs its CPU reference; \`tessera selftest\` lists all variants):\n${formatSelfTest(rows, { all: false })}`);
          if (rows.some((r) => r.status === 'fail')) process.exitCode = 1;
        }
        console.log(`\nmodels/default (${model.config.architecture}, ${model.config.numLayers} layers, hidden ${model.config.hiddenSize}; trained on the King James Bible), sampling at temperature 0.8, top-k 40, seed 7:\n`);
        const tok = requireTokenizer(model, 'tessera demo');
        const it = generateTokens(model, tok.encode(opts.prompt, { addSpecialTokens: true }), { maxTokens: Number(opts.maxTokens), temperature: 0.8, topK: 40, seed: 7 });
        process.stdout.write(opts.prompt);
        let r = await it.next();
        while (!r.done) {
          process.stdout.write(r.value.text);
          r = await it.next();
        }
        const res = r.value;
        console.log(`\n\n[${res.ids.length} tokens; prefill ${res.prefillTokensPerSecond.toFixed(1)} tok/s (the first run compiles its kernels), decode ${res.decodeTokensPerSecond.toFixed(1)} tok/s on ${caps.adapterInfo.vendor} ${caps.adapterInfo.architecture || caps.adapterInfo.device}]`);
      } finally {
        model.destroy();
        dev.destroy();
      }
    });
}

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('tessera')
    .description('Run machine-learning models on WebGPU (Node and browser) with WGSL kernels')
    .version('0.1.0')
    .showHelpAfterError();
  registerDeviceCommands(program);
  registerRegistryCommands(program);
  registerKernelsReach(program.commands.find((c) => c.name() === 'kernels')!);
  registerSelfTest(program);
  registerModelCommands(program);
  registerServeCommand(program);
  registerWebCommand(program);
  registerEmbedCommands(program);
  registerDemo(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    const { registerContractCommands } = await import('./contract.ts');
    registerContractCommands(program);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw e;
  }
  try {
    await program.parseAsync(argv);
  } catch (e) {
    const err = e as Error;
    console.error(`error: ${err.message}`);
    if (process.env.TESSERA_DEBUG) console.error(err.stack);
    process.exitCode = 1;
  }
  // Dawn keeps the event loop alive after the device is destroyed; leave once the command is done and
  // everything written to stdout/stderr has been flushed (a pipe would otherwise lose the tail).
  await new Promise<void>((r) => process.stdout.write('', () => r()));
  await new Promise<void>((r) => process.stderr.write('', () => r()));
  process.exit(process.exitCode ?? 0);
}
