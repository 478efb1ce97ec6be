/**
 * First kernels (matmul.f32, gather, residual, rmsnorm x5, softmax x2, silu, rope x4) against the CPU reference via
 * the op-test harness, plus tests that the harness itself catches wrong output, unwritten output and writes past
 * the end, that grid-stride and 2D-row dispatches cover every size, and that WGSL layouts match the registry.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDevice, describeAdapter, type TesseraDevice } from '../src/gpu/device.ts';
import { defaultRegistry, wgslPath } from '../src/node/registry.ts';
import { specializeWgsl } from '../src/registry/wgsl-features.ts';
import { gatherRef } from '../src/reference/gather.ts';
import { ropeRef, type RopeUniforms } from '../src/reference/rope.ts';
import { siluRef } from '../src/reference/silu.ts';
import { softmaxRef } from '../src/reference/softmax.ts';
import { OP_CASES } from '../src/selftest/cases.ts';
import { describeFailures, runOp, wgslEntryPoints, type VariantReport } from '../src/selftest/harness.ts';
import { opContract, variantsRunning } from '../src/selftest/launch.ts';
import { formatSelfTest, runSelfTest, toRow } from '../src/selftest/selftest.ts';
import { writeSupportDoc } from '../src/node/support-doc.ts';
import { parseSupportDoc, renderSupportDoc, supportColumn } from '../src/selftest/support.ts';
import { checkWgslAgainstRegistry, stripComments } from '../src/selftest/wgsl-check.ts';
import { testDevice } from './helpers/device.ts';

/** The variants with WGSL in this change, by operation. */
const MINE = {
  matmul: ['matmul.f32'],
  gather: ['gather.default'],
  residual: ['residual.default'],
  rmsnorm: ['rmsnorm.default', 'rmsnorm.small', 'rmsnorm.residual', 'rmsnorm.subgroup', 'rmsnorm.small_subgroup'],
  softmax: ['softmax.default', 'softmax.small'],
  silu: ['silu.default'],
  rope: ['rope.default', 'rope.compute_freqs', 'rope.qk', 'rope.ntk'],
} as const;
type MyOp = keyof typeof MINE;
const MY_OPS = Object.keys(MINE) as MyOp[];
const MY_IDS = new Set<string>(Object.values(MINE).flat());
const mine = (op: MyOp) => (id: string) => (MINE[op] as readonly string[]).includes(id);

const reg = defaultRegistry();
let dev: TesseraDevice;

beforeAll(async () => {
  dev = await testDevice();
  console.log(`kernels.test.ts on ${describeAdapter(dev.caps)}`);
});

function table(reports: VariantReport[]): string {
  return formatSelfTest(reports.map(toRow));
}

describe('WGSL sources', () => {
  it('declare the registry bindings and uniform struct (names, order, offsets) for every implemented variant', () => {
    const others: string[] = [];
    let checked = 0;
    for (const op of reg.operations.values()) {
      for (const v of op.variants.values()) {
        if (!existsSync(wgslPath(v.wgsl))) continue;
        const code = readFileSync(wgslPath(v.wgsl), 'utf8');
        if (!wgslEntryPoints(code).has(v.entryPoint)) continue;
        checked++;
        const problems = checkWgslAgainstRegistry(code, v);
        if (MY_IDS.has(v.id)) expect(problems, v.id).toEqual([]);
        else if (problems.length) others.push(`${v.id}: ${problems.join('; ')}`);
      }
    }
    for (const id of MY_IDS) expect(wgslEntryPoints(readFileSync(wgslPath(reg.variant(id).wgsl), 'utf8')).has(reg.variant(id).entryPoint), id).toBe(true);
    if (others.length) console.warn(`WGSL/registry mismatches in other kernels:\n  ${others.join('\n  ')}`);
    expect(checked).toBeGreaterThanOrEqual(MY_IDS.size);
  });

  it('open with a header naming each binding and the workgroup size', () => {
    for (const id of MY_IDS) {
      const v = reg.variant(id);
      const code = readFileSync(wgslPath(v.wgsl), 'utf8');
      const header = code.slice(0, code.search(/^\s*(struct|enable|@|const|var|fn)\b/m));
      for (const b of v.bindings) expect(header, `${id} header mentions binding ${b.name}`).toMatch(new RegExp(`\\b${b.index}\\s+${b.name}\\b`));
      expect(header, `${id} header names workgroup size`).toMatch(/workgroup_size\(/);
      expect(header, `${id} header names its entry point`).toContain(v.entryPoint);
    }
  });

  it('keep subgroup code in a feature section, so rmsnorm.wgsl compiles without subgroups', () => {
    const code = readFileSync(wgslPath('rmsnorm.wgsl'), 'utf8');
    const without = specializeWgsl(code, new Set(), 'rmsnorm.wgsl');
    expect(stripComments(without)).not.toMatch(/enable subgroups|subgroupAdd|main_subgroup/);
    expect(wgslEntryPoints(without)).toEqual(new Set(['main', 'main_small', 'main_cached']));
    expect(without.split('\n').length).toBe(code.split('\n').length);
    expect(specializeWgsl(code, new Set(['subgroups']))).toMatch(/enable subgroups;/);
  });
});

describe('CPU references', () => {
  it('softmax rows sum to 1, masked entries are 0, a fully masked row is 0', () => {
    const x = new Float32Array([1, 2, 3, -Infinity, -Infinity, -Infinity, 0.5, -Infinity, 9]);
    const y = softmaxRef(x, { inner_size: 3, outer_size: 3, temperature: 0.5 });
    expect(y[0]! + y[1]! + y[2]!).toBeCloseTo(1, 12);
    expect([y[3], y[4], y[5], y[7]]).toEqual([0, 0, 0, 0]);
    expect(y[2]! / y[1]!).toBeCloseTo(Math.exp(2), 10); // (3 - 2) / T
  });

  it('rope is the identity at position 0, keeps pair norms, and leaves the partial-rotary tail alone', () => {
    const u: RopeUniforms = { seq_len: 2, num_heads: 1, head_dim: 6, start_pos: 0, rope_base: 10000, rope_scale: 1, rotary_dim: 4, interleaved: 0, pair_span_dim: 0 };
    const x = new Float32Array([1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6]);
    const y = ropeRef(x, u, 'linear');
    expect(Array.from(y.slice(0, 6))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(y[6]! ** 2 + y[8]! ** 2).toBeCloseTo(1 + 9, 12); // pair (0, 2) at position 1
    expect(y[6]).toBeCloseTo(Math.cos(1) * 1 - Math.sin(1) * 3, 12);
    expect([y[10], y[11]]).toEqual([5, 6]);
  });

  it('silu and gather follow their documented layouts', () => {
    const fused = siluRef(new Float32Array([2, 3, 0, 5]), undefined, { size: 2, rowsplit_dim: 2 }); // one row [gate | up]
    expect(fused[0]).toBe(0);
    expect(fused[1]).toBeCloseTo((3 / (1 + Math.exp(-3))) * 5, 12);
    const s = siluRef(new Float32Array([1, 3, 2, 5]), undefined, { size: 2, rowsplit_dim: 1 });
    expect(s[0]).toBeCloseTo((1 / (1 + Math.exp(-1))) * 3, 12);
    const emb = new Float32Array([0, 1, 2, 10, 11, 12]); // [vocab 2, hidden 3]
    const base = { num_tokens: 2, hidden_size: 2, vocab_size: 2, index_offset: 1, input_hidden_size: 3, hidden_offset: 1 };
    expect(Array.from(gatherRef([7, 1, 0], emb, { ...base, transpose: 0 }))).toEqual([11, 12, 1, 2]);
    const embT = new Float32Array([0, 10, 1, 11, 2, 12]); // the same table stored [hidden 3, vocab 2]
    expect(Array.from(gatherRef([7, 1, 0], embT, { ...base, transpose: 1 }))).toEqual([11, 12, 1, 2]);
  });
});

describe('kernels vs CPU reference', () => {
  it.each(MY_OPS)('%s: every implemented variant passes every case', async (op) => {
    const reports = await runOp(dev, op, { filter: mine(op) });
    console.log(`${op}:\n${table(reports)}`);
    expect(describeFailures(reports)).toEqual([]);
    expect(reports.map((r) => r.variant).sort()).toEqual([...MINE[op]].sort());
    for (const r of reports) {
      expect(r.status, r.variant).toBe('ok');
      expect(r.cases.length, `${r.variant} case count`).toBeGreaterThanOrEqual(5);
    }
    // kernels the model's op contract runs are tested through it (the cases it can express), not only through the
    // kernel's general form
    const model = OP_CASES[op].contracts[0]!;
    for (const r of reports) {
      if (variantsRunning(opContract(model), r.variant).length) expect(r.cases.some((c) => c.contract?.startsWith(`${model}.`)), `${r.variant} through ${model}.contract.json`).toBe(true);
    }
  });

  it('report every other variant of these operations with the reason it did not run', async () => {
    const reports: VariantReport[] = [];
    for (const op of MY_OPS) reports.push(...(await runOp(dev, op, { filter: (id) => !MY_IDS.has(id), caseFilter: () => false })));
    for (const r of reports) {
      if (r.status === 'ok') continue; // another helper's kernel that runs (no cases selected here)
      expect(r.reason, r.variant).toMatch(/\S/);
    }
    // an f16 variant runs where the device has shader-f16 (the H200, lavapipe) and says why not elsewhere (SwiftShader)
    const f16 = reports.find((r) => r.variant === 'rmsnorm.default_f16')!;
    if (dev.caps.features.has('shader-f16')) expect(f16.status).toBe('ok');
    else expect(`${f16.status}: ${f16.reason}`).toMatch(/^skipped: .*shader-f16/);
  });
});

describe('the harness catches broken kernels', () => {
  it('writes past the end of an output (guard region)', async () => {
    const [r] = await runOp(dev, 'residual', { filter: (id) => id === 'residual.default', caseFilter: (n) => n === 'n1000', shrinkOutputs: 3 });
    const c = r!.cases[0]!;
    expect(r!.status).toBe('fail');
    expect(c.guardViolations).toBe(3);
    expect(c.problems.join('; ')).toMatch(/guard floats overwritten/);
    const [m] = await runOp(dev, 'matmul', { filter: (id) => id === 'matmul.f32', caseFilter: (n) => n === 'M3 N63 K65 a0.5', shrinkOutputs: 10 });
    expect(m!.cases[0]!.guardViolations).toBe(10);
  });

  it('a dispatch too small for a tiled kernel (unwritten outputs)', async () => {
    const [r] = await runOp(dev, 'matmul', { filter: (id) => id === 'matmul.f32', caseFilter: (n) => n === 'M130 N70 K33 a-2', dispatch: [1, 1, 1] });
    const c = r!.cases[0]!;
    expect(c.pass).toBe(false);
    expect(c.unwritten).toBe(130 * 70 - 64 * 64);
    expect(c.problems.join('; ')).toMatch(/never written/);
  });

  it('output that differs from the reference (max error, NMSE, NaN)', async () => {
    const opts = { filter: (id: string) => id === 'rmsnorm.default', caseFilter: (n: string) => n === 'H1000 T4 eps=0.000001 output_scale=0.5' };
    const [off] = await runOp(dev, 'rmsnorm', { ...opts, perturbExpected: (_b, w) => void (w[123] = w[123]! + 1e-3) });
    expect(off!.cases[0]!.pass).toBe(false);
    expect(off!.cases[0]!.maxErr).toBeCloseTo(1e-3, 5);
    expect(off!.cases[0]!.problems.join('; ')).toMatch(/max error .* at output\[123\]/);
    const [nan] = await runOp(dev, 'rmsnorm', { ...opts, perturbExpected: (_b, w) => void (w[0] = NaN) });
    expect(nan!.cases[0]!.nonFinite).toBe(1);
    const [ok] = await runOp(dev, 'rmsnorm', opts);
    expect(ok!.status).toBe('ok');
  });
});

describe('dispatch coverage', () => {
  it('grid-stride kernels cover every element with any dispatch width (here 2 workgroups)', async () => {
    const ids = ['gather.default', 'residual.default', 'silu.default', 'softmax.small', ...MINE.rope];
    const reports: VariantReport[] = [];
    for (const op of ['gather', 'residual', 'silu', 'softmax', 'rope'] as const) {
      reports.push(
        ...(await runOp(dev, op, {
          filter: (id) => ids.includes(id),
          caseFilter: (n) => !n.startsWith('n16777961') && !n.startsWith('n32000'),
          dispatch: [2, 1, 1],
        })),
      );
    }
    expect(describeFailures(reports)).toEqual([]);
    expect(reports.length).toBe(ids.length);
  });

  it('row kernels take rows from x + y * num_workgroups.x (2D dispatch past 65535 rows), extra workgroups idle', async () => {
    // The contracts' max_groups_x tunable wraps rows into y after 3 workgroups: [3, ceil(rows / 3), 1], so rows that
    // are not a multiple of 3 leave workgroups of the last y row idle.
    const reports: VariantReport[] = [];
    const tunables = { max_groups_x: 3 };
    reports.push(...(await runOp(dev, 'rmsnorm', { filter: mine('rmsnorm'), tunables })));
    reports.push(...(await runOp(dev, 'softmax', { filter: (id) => id === 'softmax.default', tunables })));
    expect(describeFailures(reports)).toEqual([]);
    expect(reports.every((r) => r.status === 'ok' && r.cases.length >= 5)).toBe(true);
    const wrapped = reports.flatMap((r) => r.cases).filter((c) => c.dispatch[1] > 1);
    expect(wrapped.length).toBeGreaterThan(5);
    expect(wrapped.every((c) => c.dispatch[0] === 3)).toBe(true);
    expect(wrapped.some((c) => /^H\d+ T(5|200)\b/.test(c.case))).toBe(true); // 5 and 200 rows: idle workgroups
  });
});

describe('devices without a feature', () => {
  let noSub: TesseraDevice | undefined;
  afterAll(() => noSub?.destroy());

  it('run rmsnorm without subgroups and report the subgroup variants as skipped with the reason', async () => {
    noSub = await createDevice({ disableFeatures: ['subgroups'] });
    expect(noSub.caps.features.has('subgroups')).toBe(false);
    const reports = await runOp(noSub, 'rmsnorm', { filter: mine('rmsnorm'), caseFilter: (n) => n === 'H127 T3 has_residual=2' || n === 'H4096 T3 has_residual=1' });
    console.log(`rmsnorm without subgroups:\n${table(reports)}`);
    const by = new Map(reports.map((r) => [r.variant, r]));
    for (const id of ['rmsnorm.default', 'rmsnorm.small', 'rmsnorm.residual']) expect(by.get(id)!.status, id).toBe('ok');
    for (const id of ['rmsnorm.subgroup', 'rmsnorm.small_subgroup']) {
      expect(by.get(id)!.status, id).toBe('skipped');
      expect(by.get(id)!.reason).toMatch(/requires subgroups/);
    }
  });
});

describe('selftest and support table', () => {
  it('runSelfTest returns one row per variant and prints a table', async () => {
    const rows = await runSelfTest(dev, { filter: /^silu\./ });
    const text = formatSelfTest(rows);
    console.log(text);
    expect(rows.find((r) => r.variant === 'silu.default')).toMatchObject({ status: 'ok', passed: rows.find((r) => r.variant === 'silu.default')!.cases });
    expect(text).toMatch(/silu\.default\s+ok/);
    expect(text).toMatch(dev.caps.features.has('shader-f16') ? /silu\.default_f16\s+ok/ : /silu\.default_f16\s+skipped/);
  });

  it('support mode writes a variant x device table and keeps other devices\' columns', async () => {
    const col = await supportColumn(dev, { filter: (id) => id.startsWith('residual.'), caseFilter: (n) => !n.startsWith('n16777961') });
    expect(col.cells.get('residual.default')).toBe('ok (6 cases)');
    const md = renderSupportDoc([{ device: 'other gpu', adapter: 'x', cells: new Map([['residual.default', 'FAIL 0/1: a | b']]) }, col]);
    const back = parseSupportDoc(md);
    expect(back.map((c) => c.device)).toEqual(['other gpu', col.device]);
    expect(back[0]!.cells.get('residual.default')).toBe('FAIL 0/1: a | b');
    expect(back[1]!.cells.get('residual.default')).toBe('ok (6 cases)');
    const dir = mkdtempSync(join(tmpdir(), 'tessera-support-'));
    try {
      const path = join(dir, 'kernel-support.md');
      const first = await writeSupportDoc(dev, path, { filter: (id) => id === 'silu.default' });
      expect(first).toContain('| `silu.default` |');
      await writeSupportDoc(dev, path, { filter: (id) => id === 'silu.default' });
      expect(parseSupportDoc(readFileSync(path, 'utf8')).length).toBe(1); // same device: replaced, not added
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
