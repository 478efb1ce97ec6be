import { spawnSync } from 'node:child_process';
import { Command, CommanderError } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CliArgumentError, contractPlan, parseShapes, parseValues, registerContractCommands } from '../src/cli/contract.ts';
import { ContractInputError, ContractSchemaError } from '../src/contracts/index.ts';
import { PROFILE, QMOE_PATH } from './contracts-helpers.ts';

const BIN = new URL('../bin/tessera.mjs', import.meta.url).pathname;
const SHAPES = (t: number) => `inputT=${t}x2880,routerT=${t}x32,fc1T=32x5760x1440,fc1ScalesT=32x5760,fc2T=32x2880x1440,fc2ScalesT=32x2880`;
const ATTRS = 'k=4,activation_type=swiglu,swiglu_fusion=1';

async function rejectsWith<T extends Error>(p: Promise<unknown>, cls: new (...a: never[]) => T): Promise<T> {
  try {
    await p;
  } catch (e) {
    if (e instanceof cls) return e;
    throw e;
  }
  throw new Error(`expected ${cls.name}`);
}

describe('argument parsing', () => {
  it('shapes, values', () => {
    expect(parseShapes('inputT=4x2880, routerT=4x32,s=')).toEqual({ inputT: [4, 2880], routerT: [4, 32], s: [] });
    expect(parseValues('k=4,activation_type=swiglu,alpha=1.702,neg=-1', '--attrs')).toEqual({ k: 4, activation_type: 'swiglu', alpha: 1.702, neg: -1 });
    expect(() => parseShapes('inputT=4x')).toThrow('--shapes: inputT=4x: dimensions are non-negative integers separated by "x" (e.g. inputT=4x2880)');
    expect(() => parseShapes('inputT')).toThrow('--shapes: expected name=value, got "inputT"');
    expect(() => parseShapes('a=1,a=2')).toThrow('"a" given twice');
    expect(() => parseValues('=3', '--attrs')).toThrow(CliArgumentError);
  });
});

describe('contract plan', () => {
  it('JSON output has exactly the documented shape', async () => {
    const r = await contractPlan({ contract: QMOE_PATH, shapes: SHAPES(1), attrs: ATTRS, deviceProfile: PROFILE('swiftshader') });
    expect(r.json).toEqual({
      variant: 'quant_gemv_routed',
      rejected: [
        { variant: 'quant_grouped_sgmat_routed', reason: 'requires feature "chromium-experimental-subgroup-matrix", which the device lacks' },
        { variant: 'quant_grouped_routed', reason: expect.stringContaining('groupedShapeOk') },
        { variant: 'quant_zero_inter', reason: 'when "interSize == 0" is false (2880 == 0 is false; interSize = 2880)' },
      ],
      intermediates: [
        { id: 'routeExpert', bytes: 16 },
        { id: 'routeMix', bytes: 16 },
        { id: 'hiddenAct', bytes: 46080 },
      ],
      passes: [
        { name: 'QMoE.RouteStage', shader: 'qmoe-route-stage.wgsl.jinja', dispatch: [1, 1, 1] },
        { name: 'QMoE.FC1ActivationStageGemv', shader: 'qmoe-fc1-activation-gemv.wgsl.jinja', dispatch: [1440, 4, 1] },
        { name: 'QMoE.OutputStageGemv', shader: 'qmoe-output-gemv.wgsl.jinja', dispatch: [1440, 1, 1] },
      ],
    });
    expect(Object.keys(r.json)).toEqual(['variant', 'rejected', 'intermediates', 'passes']);
  });

  it('text output: variant, rejections, intermediates, passes with dispatch sizes', async () => {
    const r = await contractPlan({ contract: QMOE_PATH, shapes: SHAPES(128), attrs: ATTRS, dtypes: 'fc1T=uint8', deviceProfile: PROFILE('nvidia-h200') });
    const lines = r.text.split('\n');
    expect(lines[0]).toBe(`com.microsoft.QMoE (${QMOE_PATH}) on nvidia-h200 (nvidia)`);
    expect(lines[1]).toBe('variant: quant_grouped_routed (priority 30)');
    expect(lines[2]).toBe('rejected (higher priority):');
    expect(lines[3]).toMatch(/^ {2}quant_grouped_sgmat_routed \(priority 32\): requires subgroup-matrix config f32->f32 8x8x8/);
    expect(r.text).toMatch(/intermediates \(6, 11803204 bytes\):\n {2}routeExpert +uint32 +\[512\] +2048 bytes/);
    expect(r.text).toMatch(/token_chunks\[0\]\.fc1_activation_stage +QMoE\.FC1ActivationStageGrouped +qmoe-fc1-activation-grouped\.wgsl\.jinja +dispatch \[48, 90, 1\]/);
  });

  it('bad arguments and bad inputs raise named errors', async () => {
    await expect(contractPlan({ contract: QMOE_PATH, shapes: '', deviceProfile: PROFILE('swiftshader') })).rejects.toThrow('--shapes is required');
    const e = await rejectsWith(contractPlan({ contract: QMOE_PATH, shapes: SHAPES(1), attrs: 'activation_type=gelu', deviceProfile: PROFILE('swiftshader') }), ContractInputError);
    expect(e.message).toContain('attribute activation_type: value "gelu" is not supported; allowed values: "relu", "swiglu"');
    await rejectsWith(contractPlan({ contract: '/nonexistent/x.json', shapes: SHAPES(1), deviceProfile: PROFILE('swiftshader') }), ContractSchemaError);
    await expect(contractPlan({ contract: QMOE_PATH, shapes: SHAPES(1), deviceProfile: '/nonexistent/profile.json' })).rejects.toThrow('--device-profile /nonexistent/profile.json');
  });
});

describe('commander wiring', () => {
  afterEach(() => vi.restoreAllMocks());
  const program = () => {
    const err: string[] = [];
    const p = new Command('tessera').exitOverride().configureOutput({ writeErr: (s) => err.push(s), writeOut: () => {} });
    registerContractCommands(p);
    return { p, err };
  };

  it('prints JSON with --json', async () => {
    const out: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((s) => (out.push(String(s)), true));
    const { p } = program();
    await p.parseAsync(['contract', 'plan', QMOE_PATH, '--shapes', SHAPES(1024), '--attrs', ATTRS, '--device-profile', PROFILE('nvidia-h200'), '--json'], { from: 'user' });
    const json = JSON.parse(out.join(''));
    expect(json.variant).toBe('quant_grouped_routed');
    expect(json.passes.at(-1)).toEqual({ name: 'QMoE.MixStage', shader: 'expert-slot-mix.wgsl.jinja', dispatch: [46080, 1, 1] });
  });

  it('bad arguments reject with the named error (main.ts turns it into exit code 1)', async () => {
    const { p } = program();
    const e = await rejectsWith(p.parseAsync(['contract', 'plan', QMOE_PATH, '--shapes', 'inputT=4xx', '--device-profile', PROFILE('swiftshader')], { from: 'user' }), CliArgumentError);
    expect(e.message).toBe('--shapes: inputT=4xx: dimensions are non-negative integers separated by "x" (e.g. inputT=4x2880)');
    const { p: p2 } = program();
    const missing = await rejectsWith(p2.parseAsync(['contract', 'plan', QMOE_PATH], { from: 'user' }), CommanderError);
    expect(missing.exitCode).toBe(1);
    expect(missing.message).toContain("required option '--shapes <list>' not specified");
  });
});

describe('the tessera binary', () => {
  const run = (args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
  it('prints the plan and exits 0; exits 1 with a clear message on bad input', () => {
    const ok = run(['contract', 'plan', QMOE_PATH, '--shapes', SHAPES(16), '--attrs', ATTRS, '--device-profile', PROFILE('swiftshader'), '--json']);
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout).variant).toBe('quant_gemv_routed');
    const bad = run(['contract', 'plan', QMOE_PATH, '--shapes', SHAPES(16), '--attrs', 'k=40,activation_type=swiglu,swiglu_fusion=1', '--device-profile', PROFILE('swiftshader')]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('error: com.microsoft.QMoE');
    expect(bad.stderr).toContain('no variant applies to these inputs on device swiftshader-device-subzero- (google) (check attribute k, input routerT)');
  });
});
