/**
 * Contract inheritance ("extends") and per-kernel pass defaults ("passDefaults"), src/contracts/extends.ts: qmoe.v2
 * extends the seed and resolves to exactly the contract it was when written out in full (test/fixtures/
 * qmoe.v2.resolved.json, saved from the file before it was rewritten); the sample op contracts' pass defaults
 * resolve to their earlier full form; merge rules and errors on small contracts.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { ContractSchemaError, resolveContractSource, validateContract } from '../src/contracts/index.ts';
import { loadContract } from '../src/node/contracts.ts';
import { opContract } from '../src/ops/runner.ts';

const json = (f: string) => JSON.parse(readFileSync(f, 'utf8')) as Record<string, unknown>;

describe('qmoe.v2 extends the seed', () => {
  const resolved = loadContract('spec/qmoe.v2.contract.json');
  const snapshot = json('test/fixtures/qmoe.v2.resolved.json');

  it('resolves to the snapshot of the full contract', () => {
    expect(resolved).toEqual(snapshot);
    // order matters where it means something: ONNX inputs are positional, variants are tried in order
    expect(Object.keys(resolved.inputs)).toEqual(Object.keys(snapshot.inputs as object));
    expect(resolved.variants.map((v) => v.id)).toEqual((snapshot.variants as { id: string }[]).map((v) => v.id));
    expect(Object.keys(resolved.derive ?? {})).toEqual(Object.keys(snapshot.derive as object));
    expect(resolved).not.toHaveProperty('extends');
    expect(resolved).not.toHaveProperty('passDefaults');
  });

  it('the same without a file system (bundled base) as through loadContract', () => {
    expect(validateContract(json('spec/qmoe.v2.contract.json'), 'qmoe.v2')).toEqual(snapshot);
  });

  it('the file repeats none of the seed derive entries and no pass bindings list', () => {
    const raw = json('spec/qmoe.v2.contract.json');
    const seed = json('spec/qmoe.contract.json');
    expect(raw.extends).toBe('qmoe.contract.json');
    const seedDerive = seed.derive as Record<string, string>;
    const repeated = Object.entries(raw.derive as Record<string, string>).filter(([k, v]) => seedDerive[k] === v);
    expect(repeated).toEqual([]);
    const passes: Record<string, unknown>[] = [];
    const walk = (ps: Record<string, unknown>[]) => ps.forEach((p) => (passes.push(p), walk((p.passes as Record<string, unknown>[]) ?? [])));
    for (const v of raw.variants as { passes: Record<string, unknown>[] }[]) walk(v.passes);
    expect(passes.filter((p) => 'bindings' in p).map((p) => p.id)).toEqual([]);
    expect(readFileSync('spec/qmoe.v2.contract.json', 'utf8').length).toBeLessThan(readFileSync('test/fixtures/qmoe.v2.resolved.json', 'utf8').length * 0.6);
  });
});

describe('pass defaults in op contracts', () => {
  for (const name of ['sample', 'sample_f16']) {
    it(`${name}.contract.json resolves to its full form`, () => {
      expect(opContract(name)).toEqual(json(`test/fixtures/contracts-resolved/${name}.json`));
      expect(json(`src/ops/contracts/${name}.contract.json`)).toHaveProperty('passDefaults');
    });
  }
});

// ---------------------------------------------------------------------------------------------------------------
const base = {
  name: 'base',
  inputs: { a: { dtype: 'float32' }, b: { dtype: 'float32' }, c: { dtype: 'float32' } },
  outputs: { y: { dtype: 'float32', shape: 'shapes.a' } },
  derive: { n: 'numel(shapes.a)', m: 'n * 2', k: '1' },
  variants: [
    { id: 'one', priority: 1, passes: [{ id: 'p', kernel: 'residual.default', uniforms: { size: 'n', scale: '1' }, buffers: { input: 'a', residual: 'b', output: 'y' }, dispatch: { x: 'ceilDiv(n, 256)' } }] },
    { id: 'two', priority: 2, passes: [{ id: 'p', kernel: 'residual.default', uniforms: { size: 'n', scale: '2' }, buffers: { input: 'a', residual: 'c', output: 'y' }, dispatch: { x: 'ceilDiv(n, 256)' } }] },
  ],
};
const lookupOf = (bases: Record<string, unknown>) => (n: string) => (n in bases ? { json: structuredClone(bases[n]), source: n } : undefined);

describe('merge rules', () => {
  it('map sections merge by key: replace in place, null removes, new keys before their named successor or at the end', () => {
    const child = { extends: 'base', inputs: { x: { dtype: 'float32' }, b: { dtype: 'float16' }, c: null, z: { dtype: 'float32' } }, derive: { m: 'n * 3', extra: 'm + 1' } };
    const r = resolveContractSource(child, 'child', lookupOf({ base })) as typeof base & { inputs: Record<string, { dtype: string }> };
    expect(Object.keys(r.inputs)).toEqual(['a', 'x', 'b', 'z']);
    expect(r.inputs.b!.dtype).toBe('float16');
    expect(r.derive).toEqual({ n: 'numel(shapes.a)', m: 'n * 3', k: '1', extra: 'm + 1' });
    expect(Object.keys(r.derive)).toEqual(['n', 'm', 'k', 'extra']);
    expect(r.name).toBe('base');
  });

  it('variants merge by id: a child variant replaces the base one in place; new ones follow the placement rule', () => {
    const two = { ...base.variants[1]!, priority: 5 };
    const zero = { ...base.variants[0]!, id: 'zero' };
    const r = resolveContractSource({ extends: 'base', name: 'child', variants: [zero, two] }, 'child', lookupOf({ base })) as typeof base;
    expect(r.variants.map((v) => v.id)).toEqual(['one', 'zero', 'two']);
    expect(r.variants[2]!.priority).toBe(5);
    expect(r.name).toBe('child');
  });

  it('pass defaults fill passes by kernel, operation.* and *; the pass and the more specific key win', () => {
    const strip = (v: (typeof base.variants)[number]) => ({ ...v, passes: v.passes.map(({ id, kernel, dispatch, uniforms }) => ({ id, kernel, dispatch, ...(uniforms.scale === '2' ? { uniforms: { scale: '2' } } : {}) })) });
    const c = {
      ...base,
      passDefaults: {
        '*': { buffers: { input: 'a', residual: 'c', output: 'y' }, uniforms: { size: 'k' } },
        'residual.*': { uniforms: { size: 'n', scale: '1' } },
        'residual.default': { buffers: { residual: 'b' } },
      },
      variants: base.variants.map(strip),
    };
    const r = validateContract(c, 'defaults');
    expect(r.variants[0]!.passes).toEqual(base.variants[0]!.passes);
    expect(r.variants[1]!.passes[0]).toEqual({ ...base.variants[1]!.passes[0], buffers: { input: 'a', residual: 'b', output: 'y' } });
  });

  it("the base's pass defaults fill the child's passes too; a chain of bases resolves", () => {
    const b1 = { ...base, passDefaults: { 'residual.default': { buffers: { input: 'a', residual: 'b', output: 'y' } } }, variants: [] as unknown[] };
    const b2 = { extends: 'b1', derive: { k: '2' } };
    const child = { extends: 'b2', variants: [{ id: 'only', priority: 1, passes: [{ id: 'p', kernel: 'residual.default', uniforms: { size: 'n', scale: 'k' }, dispatch: { x: '1' } }] }] };
    const r = validateContract(child, 'child', lookupOf({ b1, b2 }));
    expect(r.derive!.k).toBe('2');
    expect(r.variants[0]!.passes[0]).toMatchObject({ buffers: { input: 'a', residual: 'b', output: 'y' } });
  });

  it("a child's pass-defaults entry merges into the base's: derive, uniforms and buffers by key (null removes one), the rest replaced", () => {
    const b1 = {
      ...base,
      passDefaults: { 'residual.default': { buffers: { input: 'a', residual: 'b', output: 'y' }, uniforms: { size: 'n', scale: '1' }, dispatch: { x: '1' } } },
      variants: [] as unknown[],
    };
    const child = {
      extends: 'b1',
      passDefaults: { 'residual.default': { buffers: { residual: 'c' }, uniforms: { scale: null }, dispatch: { x: '2' } } },
      variants: [{ id: 'only', priority: 1, passes: [{ id: 'p', kernel: 'residual.default', uniforms: { scale: 'k' } }] }],
    };
    const r = validateContract(child, 'child', lookupOf({ b1 }));
    // buffers: the base's input and output kept, residual the child's; uniforms: size kept, scale removed by the
    // child's null (the pass gives its own); dispatch replaced whole
    expect(r.variants[0]!.passes[0]).toMatchObject({ buffers: { input: 'a', residual: 'c', output: 'y' }, uniforms: { size: 'n', scale: 'k' }, dispatch: { x: '2' } });
    const noScale = { ...child, variants: [{ id: 'only', priority: 1, passes: [{ id: 'p', kernel: 'residual.default' }] }] };
    expect((validateContract(noScale, 'child', lookupOf({ b1 })).variants[0]!.passes[0] as { uniforms: unknown }).uniforms).toEqual({ size: 'n' });
  });

  it('errors name the file and field: unknown base, a cycle, a bad default property, a pass left incomplete', () => {
    const err = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(ContractSchemaError);
        return (e as Error).message;
      }
      throw new Error('expected a ContractSchemaError');
    };
    expect(err(() => validateContract({ extends: 'nope.contract.json' }, 'c.json'))).toMatch(/c\.json.*extends.*no base contract "nope\.contract\.json"/s);
    expect(err(() => validateContract({ extends: 'x' }, 'c.json', lookupOf({ x: { extends: 'y' }, y: { extends: 'x' } })))).toMatch(/extends itself/);
    expect(err(() => validateContract({ ...base, passDefaults: { '*': { kernel: 'residual.default' } } }, 'c.json'))).toMatch(/passDefaults\["\*"\]\.kernel/);
    expect(err(() => validateContract({ extends: 3 }, 'c.json'))).toMatch(/extends/);
    // a kernel pass needs buffers: with no default giving them the schema says so
    const noBuffers = { ...base, passDefaults: { 'rmsnorm.*': { buffers: { input: 'a' } } }, variants: [{ id: 'v', passes: [{ id: 'p', kernel: 'residual.default', dispatch: { x: '1' } }] }] };
    expect(err(() => validateContract(noBuffers, 'c.json'))).toMatch(/buffers/);
  });

  it('a contract without extends or passDefaults comes back unchanged', () => {
    expect(resolveContractSource(base, 'b')).toBe(base);
  });
});
