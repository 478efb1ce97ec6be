/**
 * rep_penalty vs the CPU reference (src/reference/rep-penalty.ts) through the op-test harness (cases in
 * src/selftest/cases-rep-penalty.ts: repeats, padding and out-of-range ids, rows at an offset), plus the f16 twin.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { readFloat32, uploadBuffer } from '../src/gpu/buffers.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { defaultRegistry, wgslPath } from '../src/node/registry.ts';
import { REP_PENALTY_CASES } from '../src/selftest/cases-rep-penalty.ts';
import { describeFailures, runOp } from '../src/selftest/harness.ts';
import { planOp, runPlan } from '../src/selftest/launch.ts';
import { testDevice } from './helpers/device.ts';
import { registryWithSources } from './helpers/emulate-f16.ts';

const reg = defaultRegistry();
let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

describe('rep_penalty vs CPU reference (op-test harness)', () => {
  it('rep_penalty.default passes every case; the f16 twin says why it did not run', async () => {
    const reports = await runOp(dev, 'rep_penalty');
    expect(describeFailures(reports)).toEqual([]);
    const def = reports.find((r) => r.variant === 'rep_penalty.default')!;
    expect(def.status).toBe('ok');
    expect(def.cases.length).toBe(REP_PENALTY_CASES.cases.length);
    for (const r of reports) if (r.status !== 'ok') expect(r.reason, r.variant).toBeTruthy();
  });

  it('penalizes an id once however often it repeats (also across 256-entry chunks)', async () => {
    const history = Uint32Array.from({ length: 600 }, (_, i) => (i % 3 === 0 ? 5 : i % 3 === 1 ? 2 : 0xffffffff));
    const plan = planOp(dev, 'rep_penalty', { shapes: { logits: [8], history: [600] }, attributes: { penalty: 2, count: 600 } });
    expect(plan.passes.map((p) => p.kernel)).toEqual(['rep_penalty.default']);
    const lb = uploadBuffer(dev.device, Float32Array.from([1, 1, 4, 1, 1, -3, 1, 1]), 'logits');
    const hb = uploadBuffer(dev.device, history, 'history');
    await runPlan(dev, plan, { logits: lb, history: hb });
    expect([...(await readFloat32(dev.device, lb, 8))]).toEqual([1, 1, 2, 1, 1, -6, 1, 1]);
    lb.destroy();
    hb.destroy();
  });
});

describe('rep_penalty f16 twin', () => {
  it('rep_penalty_f16.wgsl is rep_penalty.wgsl with enable f16 and logit_t = f16', () => {
    const code = (s: string) =>
      s
        .split('\n')
        .map((l) => l.replace(/\/\/.*$/, '').trimEnd())
        .filter((l) => l.trim() !== '');
    const a = readFileSync(wgslPath(reg.variant('rep_penalty.default').wgsl), 'utf8');
    const b = readFileSync(wgslPath(reg.variant('rep_penalty.default_f16').wgsl), 'utf8');
    expect(code(b).filter((l) => l !== 'enable f16;').map((l) => l.replace('alias logit_t = f16;', 'alias logit_t = f32;'))).toEqual(code(a));
    expect(b).toMatch(/^enable f16;$/m);
  });

  it('compiles with logit_t retyped to i32 and penalizes integer logits', async () => {
    // Launched through rep_penalty_rows' f16 variant (f16 logits [1, 16]); the registry view compiles the twin's WGSL
    // with logit_t = i32, so the logits buffer holds i32 words.
    const v = reg.variant('rep_penalty.default_f16');
    const code = readFileSync(wgslPath(v.wgsl), 'utf8').replace(/^enable f16;$/m, '').replace('alias logit_t = f16;', 'alias logit_t = i32;');
    const registry = registryWithSources(reg, { [v.id]: code });
    const plan = planOp(dev, 'rep_penalty_rows', { shapes: { logits: [1, 16], history: [1, 5] }, dtypes: { logits: 'float16' }, attributes: { penalty: 2 }, registry });
    expect(plan.passes.map((p) => p.kernel)).toEqual(['rep_penalty.default_f16']);
    const logits = Int32Array.from([8, -6, 4, 0, 10, 12, -2, 7, 1, 1, 1, 1, 1, 1, 1, 1]);
    const lb = uploadBuffer(dev.device, logits, 'logits');
    const hb = uploadBuffer(dev.device, Uint32Array.from([0, 1, 0, 4, 99]), 'history');
    await runPlan(dev, plan, { logits: lb, history: hb }, { registry });
    const got = new Int32Array((await readFloat32(dev.device, lb, 16)).buffer);
    expect([...got.subarray(0, 6)]).toEqual([4, -12, 4, 0, 5, 12]);
    lb.destroy();
    hb.destroy();
  });
});
