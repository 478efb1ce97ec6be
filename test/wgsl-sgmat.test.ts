/**
 * The subgroup-matrix spelling rewrite (src/gpu/wgsl-sgmat.ts): legacy calls with a literal majorness become the
 * templated form newer Dawn wants (it warns on stdout per legacy call); anything else is left alone. Whether the
 * rewritten kernels compile and compute right is the GPU lane's job (test/kernels-gemm-sgmat.test.ts, the QMoE
 * grouped tests): SwiftShader has no subgroup matrices.
 */
import { describe, expect, it } from 'vitest';
import { modernizeSubgroupMatrix } from '../src/gpu/wgsl-sgmat.ts';

describe('modernizeSubgroupMatrix', () => {
  it('moves a literal majorness into the template list (loads and stores), keeping every other argument', () => {
    const src = [
      'let left0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&a_stage, (sr * 64u + 16u) * KS + 0u, false, KS);',
      'let right1 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&b_stage, (sg * STRIP + 16u) * KS + 16u, true, KS);',
      'subgroupMatrixStore(&c_stage, 16u * TC + sg * STRIP + 0u, acc1_0, false, TC);',
    ].join('\n');
    expect(modernizeSubgroupMatrix(src).split('\n')).toEqual([
      'let left0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&a_stage, (sr * 64u + 16u) * KS + 0u, KS);',
      'let right1 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&b_stage, (sg * STRIP + 16u) * KS + 16u, KS);',
      'subgroupMatrixStore<row_major>(&c_stage, 16u * TC + sg * STRIP + 0u, acc1_0, TC);',
    ]);
  });

  it('leaves the templated form, a non-literal majorness, other builtins and text alone (and is idempotent)', () => {
    const keep = [
      'let a = subgroupMatrixLoad<subgroup_matrix_left<f32, 8, 8>, col_major>(&s, 0u, 8u);',
      'subgroupMatrixStore<row_major>(&o, 0u, a, 8u);',
      'let b = subgroupMatrixLoad<subgroup_matrix_left<f32, 8, 8>>(&s, 0u, flag, 8u);',
      'acc = subgroupMatrixMultiplyAccumulate(left0, right0, acc);',
      '// subgroupMatrixLoad(...) in a comment without a template list',
    ].join('\n');
    expect(modernizeSubgroupMatrix(keep)).toBe(keep);
    const once = modernizeSubgroupMatrix('x = subgroupMatrixLoad<subgroup_matrix_result<f32, 8, 8>>(&v, 1u, true, 8u); y = 1;');
    expect(once).toBe('x = subgroupMatrixLoad<subgroup_matrix_result<f32, 8, 8>, col_major>(&v, 1u, 8u); y = 1;');
    expect(modernizeSubgroupMatrix(once)).toBe(once);
  });
});
