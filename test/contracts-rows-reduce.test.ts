/**
 * The gemv-q8a rows variants' reduction and slot math as the contracts choose them (no GPU: plans resolved against the
 * H200's profile, subgroups of 32): the reduce-scatter only where the workgroup is whole subgroups of the adapter's
 * largest size (a workgroup of 16 lanes is half a subgroup there: its shuffles would read lanes that do not run), and
 * slotImad in rows mode and slot() in the subgroup-item walk (fixed since the other forms were measured and dropped), and
 * the slots indexed exactly where a team's lanes hold the row's slots exactly (rowsExact); the tunables and dtypes of layouts
 * measured and dropped are refused by name. The kernels' results both ways: the kernels-* tests.
 */
import { describe, expect, it } from 'vitest';
import { resolveContract } from '../src/contracts/index.ts';
import { renderPassShader } from '../src/contracts/run.ts';
import { opContract } from '../src/ops/runner.ts';
import { editedProfile, h200 } from './contracts-helpers.ts';
import type { DeviceCaps } from '../src/gpu/caps.ts';

const H = 4096;
const I = 14336;

function down(tunables: Record<string, string | number>, device: DeviceCaps = h200, K = I) {
  return resolveContract(opContract('linear_q8'), {
    shapes: { xq: [1, K / 4], xm: [1, (3 * K) / 16], w: [H, K], y: [1, H] },
    dtypes: { w: 'q4_k', xq: 'uint32' },
    attributes: { accumulate: 1 },
    tunables,
    device,
  });
}

function oProj(tunables: Record<string, string | number>) {
  return resolveContract(opContract('linear_fused'), {
    shapes: { x: [1, H], w: [H, H], y: [1, H] },
    dtypes: { w: 'q4_k' },
    attributes: { accumulate: 1 },
    tunables,
    device: h200,
  });
}

describe('rows-mode reduction and slot math', () => {
  it('reduce-scatters in whole subgroups, and sums by subgroupAdd in a workgroup smaller than one', () => {
    const p = down({});
    expect(p.variant).toBe('q8h_rows');
    expect(p.derived.rowsReduce).toBe('scatter');
    expect(renderPassShader(p, p.passes[0]!)).toContain('subgroupShuffleXor(select(acc.zw, acc.xy, up1), sgsize / 2u)');
    const small = down({ gemvWorkgroup: 16, gemvRowBlock: 16 }, h200, 1280); // 40 slots a row: 3 a lane
    expect(small.variant).toBe('q8h_rows');
    expect(small.derived.rowsReduce).toBe('add');
    const wgsl = renderPassShader(small, small.passes[0]!);
    expect(wgsl).toContain('let total = subgroupAdd(acc);');
    expect(wgsl).not.toContain('subgroupShuffleXor(select(acc.zw');
  });

  it('sums by subgroupAdd on an adapter that does not state its subgroup sizes', () => {
    const bare = editedProfile('nvidia-h200', (prof) => {
      delete (prof.adapterInfo as { subgroupMaxSize?: number }).subgroupMaxSize;
    });
    const p = down({}, bare);
    expect(p.variant).toBe('q8h_rows');
    expect(p.derived.rowsReduce).toBe('add');
  });

  it('takes slotImad in rows mode; the dropped slot-math and slot-pair tunables are refused by name', () => {
    const wgsl = (p: ReturnType<typeof down>) => renderPassShader(p, p.passes[0]!);
    const imad = (p: ReturnType<typeof down>) => /acc\[0\] = (select\(acc\[0\], )?slotImad\(acc\[0\], /.test(wgsl(p));
    expect(imad(down({}))).toBe(true);
    expect(wgsl(down({}))).not.toMatch(/\+= (select\(0\.0, )?slot\(|slotLean/);
    const o = oProj({});
    expect(o.variant).toMatch(/rows/);
    expect(imad(o)).toBe(true);
    expect(() => down({ rowsMath: 'lean' })).toThrow(/rowsMath/);
    expect(() => oProj({ gemvMath: 'lean' })).toThrow(/gemvMath/);
    expect(() => oProj({ gemvSlotPairs: 'on' })).toThrow(/gemvSlotPairs/);
  });

  it('refuses the dropped planes layouts: their tunables by name, their dtypes as weights', () => {
    const linear = (tunables: Record<string, string | number>, w = 'q4_k') =>
      resolveContract(opContract('linear'), { shapes: { x: [1, H], w: [H, H], y: [1, H] }, dtypes: { w }, tunables, device: h200 });
    expect(linear({}).variant).toBe('q4k_rows');
    expect(() => linear({ q4kPlanes: 'on' })).toThrow(/q4kPlanes/);
    expect(() => linear({ q80Planes: 'on' })).toThrow(/q80Planes/);
    for (const dtype of ['q4_k_planes', 'q8_0_planes']) expect(() => linear({}, dtype)).toThrow(new RegExp(dtype));
  });

  it('indexes slots exactly where a team holds the row\'s slots exactly, clamps and selects elsewhere', () => {
    const wgsl = (p: ReturnType<typeof down>) => renderPassShader(p, p.passes[0]!);
    // K = 14336: 448 slots of 32 values, 448 lanes of one slot
    const exact = wgsl(down({}));
    expect(exact).toContain('acc[0] = slotImad(acc[0], ');
    expect(exact).not.toMatch(/select\(acc\[0\], slotImad\(|let ok0 =/);
    expect(exact).toContain('let s0 = lt + 0u;');
    for (const src of [wgsl(down({ rowsExact: 'off' })), wgsl(down({ gemvWorkgroup: 16, gemvRowBlock: 16 }, h200, 1280))]) {
      // off, or 40 slots over 16 lanes of 3 (48): the slots past the row's end clamped, their products dropped
      expect(src).toContain('acc[0] = select(acc[0], slotImad(acc[0], ');
      expect(src).toContain('let s0 = min(lt + 0u, last);');
    }
  });

  it('takes slot() in linear_fused\'s subgroup-item walk', () => {
    const p = oProj({ gemvRowBlock: -1 });
    expect(p.variant).not.toMatch(/rows/);
    const src = renderPassShader(p, p.passes[p.passes.length - 1]!);
    expect(src).toMatch(/\+= select\(0\.0, slot\(/);
    expect(src).not.toContain('slotImad');
  });

  it('takes Q6_K in wide slots where asked (q6Wide): 64 values a lane, half the lanes a row', () => {
    const q6 = (tunables: Record<string, string | number>) =>
      resolveContract(opContract('linear_q8'), {
        shapes: { qa: [1, I / 4], da: [1, I / 32], rs: [1, I / 16], w: [H, I], y: [1, H] },
        dtypes: { w: 'q6_k', qa: 'uint32' },
        attributes: { accumulate: 1 },
        tunables,
        device: h200,
      });
    const narrow = q6({});
    const wide = q6({ q6Wide: 'on' });
    expect([narrow.variant, wide.variant]).toEqual(['q6k_rows', 'q6k_rows']);
    expect([narrow.derived.workgroupSize, wide.derived.workgroupSize]).toEqual([448, 224]); // K / 32 and K / 64 slots
    const w = renderPassShader(wide, wide.passes[0]!);
    expect(w).toContain('slot6w(');
    expect(w).not.toContain('slot6(');
    expect(w).toContain('let nslots = params.K / 64u;');
    expect(renderPassShader(narrow, narrow.passes[0]!)).not.toContain('slot6w(');
    // the LM head of a Q4_K_M model (linear_fused, rmsnorm prologue) and linear at M = 1 take it too
    const head = resolveContract(opContract('linear_fused'), { shapes: { x: [1, H], w: [128256, H], gamma: [H], y: [1, 128256] }, dtypes: { w: 'q6_k' }, attributes: { prologue: 'rmsnorm' }, tunables: { q6Wide: 'on' }, device: h200 });
    expect(head.variant).toBe('q6k_norm_rows');
    expect(renderPassShader(head, head.passes[0]!)).toContain('slot6w(');
    const lin = resolveContract(opContract('linear'), { shapes: { x: [1, I], w: [H, I] }, dtypes: { w: 'q6_k' }, tunables: { q6Wide: 'on' }, device: h200 });
    expect(lin.variant).toBe('q6k_rows');
    expect(renderPassShader(lin, lin.passes[0]!)).toContain('slot6w(');
  });

  it('takes a Q6_K LM head in 32 rows of one team by default (q6RowBlock 0), 16 in 2 teams where asked', () => {
    const q6head = (tunables: Record<string, string | number>) =>
      resolveContract(opContract('linear_fused'), { shapes: { x: [1, H], w: [128256, H], gamma: [H], y: [1, 128256] }, dtypes: { w: 'q6_k' }, attributes: { prologue: 'rmsnorm' }, tunables, device: h200 });
    expect([q6head({}).derived.rowsBlock, q6head({}).derived.rowsTeams]).toEqual([32, 1]);
    expect([q6head({ q6RowBlock: 16 }).derived.rowsBlock, q6head({ q6RowBlock: 16 }).derived.rowsTeams]).toEqual([16, 2]);
  });
});
