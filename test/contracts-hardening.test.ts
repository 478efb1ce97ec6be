/**
 * Contract loading and selection under hostile input: deep expressions fail with a named error, a condition that
 * cannot be evaluated stops selection (it never falls silently to a lower-priority variant).
 */
import { describe, expect, it } from 'vitest';
import { ContractError, ContractSchemaError, resolveContract, validateContract } from '../src/contracts/index.ts';
import { compile, ExprError, MAX_EXPR_DEPTH } from '../src/expr/index.ts';
import { caught, swiftshader } from './contracts-helpers.ts';

const contract = (when: string[]) => ({
  name: 'pick',
  inputs: { x: { dtype: 'float32', rank: 1 } },
  outputs: {},
  derive: { n: 'dim(shapes.x, 0)' },
  bindings: { p: { struct: [{ name: 'n', type: 'u32', value: 'n' }] }, x: { arg: 'x' } },
  variants: [
    { id: 'fast', priority: 20, when, passes: [{ id: 'a', shader: 'none.wgsl.jinja', bindings: ['p', 'x'], dispatch: { x: 1 } }] },
    { id: 'fallback', priority: 10, passes: [{ id: 'a', shader: 'none.wgsl.jinja', bindings: ['p', 'x'], dispatch: { x: 1 } }] },
  ],
});

describe('expression depth', () => {
  it.each([
    ['parentheses', '('.repeat(100_000) + '1' + ')'.repeat(100_000)],
    ['an operator chain', Array(100_000).fill('1').join(' + ')],
    ['unary minus', '-'.repeat(100_000) + '1'],
    ['member access', 'a' + '.b'.repeat(10_000)],
  ])('%s 100k deep is an ExprError naming the limit, not a stack overflow', (_what, src) => {
    expect(() => compile(src)).toThrow(ExprError);
    expect(() => compile(src)).toThrow(`expression nests deeper than ${MAX_EXPR_DEPTH} levels`);
  });

  it('accepts expressions within the limit', () => {
    expect(() => compile('('.repeat(100) + '1' + ')'.repeat(100))).not.toThrow();
    expect(() => compile(Array(200).fill('1').join(' + '))).not.toThrow();
  });

  it('a contract with a too-deep expression fails at load, naming the path', () => {
    const c = contract(['(' .repeat(5000) + 'true' + ')'.repeat(5000)]);
    expect(() => validateContract(c, 'deep.contract.json')).toThrow(ContractSchemaError);
    expect(() => validateContract(c, 'deep.contract.json')).toThrow(/variants\[0\] \(fast\)\.when\[0\]: expression does not parse: expression nests deeper/);
  });
});

describe('conditions that cannot be evaluated', () => {
  it('division by zero in a condition stops selection with the expression and its values (no silent fallback)', () => {
    const c = validateContract(contract(['n / (n - 4) > 0']), 'pick.contract.json');
    const e = caught(() => resolveContract(c, { shapes: { x: [4] }, device: swiftshader }), ContractError);
    expect(e.rejected.map((r) => r.variant)).toEqual(['fast']);
    expect(e.message).toContain('when "n / (n - 4) > 0" could not be evaluated');
    expect(e.message).toContain('division by zero');
    // The same contract with a valid shape picks the fast variant; with a false condition, the fallback.
    expect(resolveContract(c, { shapes: { x: [8] }, device: swiftshader }).variant).toBe('fast');
    expect(resolveContract(c, { shapes: { x: [2] }, device: swiftshader }).variant).toBe('fallback');
  });

  it('a condition that is not a boolean is an error too', () => {
    const c = validateContract(contract(['n']), 'pick.contract.json');
    expect(() => resolveContract(c, { shapes: { x: [3] }, device: swiftshader })).toThrow(/must be true or false, got 3/);
  });
});
