/**
 * Dynamic attributes: declared per contract, allowed to reach uniform fields only (checked at load, naming the
 * expression and the chain of derived names), resolved once (plans keyed on static attributes) and re-written per
 * call from compiled residual expressions that must agree with a full resolution for the same values.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ContractInputError,
  ContractSchemaError,
  resolveContract,
  templateContext,
  uniformBytes,
  validateContract,
  type KernelContract,
  type Plan,
  type PlanBinding,
} from '../src/contracts/index.ts';
import { loadContract } from '../src/node/contracts.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { OpRunner, registryLookup } from '../src/ops/runner.ts';
import { defaultRegistry } from '../src/node/registry.ts';
import { caught, h200, swiftshader } from './contracts-helpers.ts';

const CONTRACTS_DIR = new URL('../src/ops/contracts/', import.meta.url).pathname;

const raw = (op: string) => JSON.parse(readFileSync(`${CONTRACTS_DIR}${op}.contract.json`, 'utf8')) as Record<string, any>;
const kernels = registryLookup(defaultRegistry());
const uniforms = (p: Plan) => p.passes.flatMap((pass) => pass.bindings.filter((b): b is Extract<PlanBinding, { kind: 'uniform' }> => b.kind === 'uniform'));
const words = (b: ArrayBuffer) => Array.from(new Uint32Array(b));

const schemaError = (json: unknown) => caught(() => validateContract(json, 'test.contract.json'), ContractSchemaError);

describe('load-time flow checks', () => {
  it('rejects a dynamic attribute that reaches a condition through derived names, naming the chain', () => {
    const c = raw('attention');
    c.derive.shapeOk += ' and kvLen <= capacity';
    const e = schemaError(c);
    expect(e.message).toMatch(/variants\[\d+\] \(prefill_f16kv\)\.when\[0\]: the condition "shapeOk" depends on dynamic attribute attrs\.kv_len \(through shapeOk -> kvLen\)/);
  });

  it('rejects a dynamic attribute in a dispatch size, an intermediate shape, an output shape and a pass derive', () => {
    const c = raw('rope');
    c.variants[0].passes[0].dispatch.x = 'ceilDiv(pairs + attrs.start_pos, 256)';
    c.variants[0].passes[0].derive = { t: 'attrs.start_pos' };
    c.variants[0].intermediates = [{ id: 'tmp', dtype: 'float32', shape: ['attrs.start_pos'] }];
    c.outputs = { y: { dtype: 'float32', shape: '[attrs.start_pos]' } };
    const e = schemaError(c);
    expect(e.problems.map((p) => p.path)).toEqual(
      expect.arrayContaining([
        'outputs.y.shape',
        'variants[0] (tables).intermediates[0].shape[0]',
        'variants[0] (tables).passes[0] (rotate).derive.t',
        'variants[0] (tables).passes[0] (rotate).dispatch.x',
      ]),
    );
    expect(e.message).toContain('a dynamic value may reach uniform fields only');
  });

  it('rejects a bound that depends on a dynamic attribute', () => {
    const c = raw('kv_write');
    c.attributes.start_pos.dynamic = { max: 'attrs.start_pos + 1' };
    expect(schemaError(c).message).toContain('attributes.start_pos.dynamic.max: the bound');
  });

  it('reports unknown names, unknown functions and derive cycles at load, with the cycle', () => {
    const c = raw('rope');
    c.derive.a = 'b + 1';
    c.derive.b = 'a * 2';
    c.derive.c = 'nope + frob(1)';
    const e = schemaError(c);
    expect(e.message).toMatch(/cycle in derived names: derive\.(a|b) -> derive\.(a|b) -> derive\.(a|b)/);
    expect(e.message).toContain('derive.c: unknown name "nope"');
    expect(e.message).toContain('calls unknown function frob()');
  });

  it('accepts every shipped contract', () => {
    for (const op of ['attention', 'rope', 'kv_write', 'sample', 'rep_penalty', 'take_rows', 'copy_elements', 'rmsnorm', 'linear']) {
      expect(() => loadContract(`${CONTRACTS_DIR}${op}.contract.json`)).not.toThrow();
    }
  });
});

describe('dynamic values at resolve time', () => {
  const fakeDev = { caps: h200 } as unknown as TesseraDevice;

  it('plans are keyed on static attributes: one resolution serves every position', () => {
    const ops = new OpRunner(fakeDev);
    const t = { x: { dtype: 'float32', shape: [1, 8, 64] }, cos: { dtype: 'float32', shape: [128, 32] }, sin: { dtype: 'float32', shape: [128, 32] } };
    const a = ops.plan('rope', t, { start_pos: 3, interleaved: 0 });
    const b = ops.plan('rope', t, { start_pos: 90, interleaved: 0 });
    expect(b).toBe(a);
    expect(ops.resolutions).toBe(1);
    expect(a.attrs.start_pos).toBe(0); // resolved with the default, not the first caller's value
    expect(ops.plan('rope', t, { start_pos: 3, interleaved: 1 })).not.toBe(a);
  });

  const cases: { op: string; shapes: Record<string, number[]>; dtypes?: Record<string, string>; stat?: Record<string, unknown>; dyn: Record<string, number>[] }[] = [
    { op: 'rope', shapes: { x: [4, 8, 64], cos: [256, 32], sin: [256, 32] }, dyn: [{ start_pos: 7 }, { start_pos: 252 }] },
    { op: 'kv_write', shapes: { k: [1, 8, 64], v: [1, 8, 64], kCache: [512, 8, 64], vCache: [512, 8, 64] }, dtypes: { kCache: 'float16', vCache: 'float16' }, dyn: [{ start_pos: 300 }] },
    { op: 'kv_write', shapes: { k: [3, 2, 16], v: [3, 2, 16], kCache: [64, 2, 16], vCache: [64, 2, 16] }, dtypes: { kCache: 'float32', vCache: 'float32' }, dyn: [{ start_pos: 61 }] },
    { op: 'attention', shapes: { q: [1, 32, 64], k: [512, 8, 64], v: [512, 8, 64], kvLen: [1], pageTable: [1] }, dtypes: { k: 'float16', v: 'float16' }, stat: { scale: 0.125 }, dyn: [{ start_pos: 17, kv_len: 18 }, { start_pos: 200 }] },
    { op: 'sample', shapes: { logits: [2048] }, stat: { temperature: 0.7, top_k: 40, top_p: 0.9 }, dyn: [{ seed: 123456789 }] },
    { op: 'rep_penalty', shapes: { logits: [2048], history: [256] }, stat: { penalty: 1.3 }, dyn: [{ count: 17 }, { count: 256 }] },
    { op: 'take_rows', shapes: { x: [16, 256] }, stat: { count: 1 }, dyn: [{ first: 10 }] },
  ];
  it.each(cases)('$op: re-written uniform fields equal a full resolution with the same values', ({ op, shapes, dtypes, stat, dyn }) => {
    const c = loadContract(`${CONTRACTS_DIR}${op}.contract.json`);
    const resolve = (attributes: Record<string, unknown>) => resolveContract(c, { shapes, ...(dtypes ? { dtypes } : {}), attributes: attributes as never, device: h200, kernels });
    const base = resolve(stat ?? {});
    expect(Object.keys(base.dynamic).length).toBeGreaterThan(0);
    for (const values of dyn) {
      const full = resolve({ ...stat, ...values });
      expect(full.variant).toBe(base.variant);
      const got = uniforms(base).map((b) => words(uniformBytes(base, b, values)));
      const want = uniforms(full).map((b) => words(b.data));
      expect(got).toEqual(want);
    }
  });

  it('checks dynamic values against their bounds', () => {
    const c = loadContract(`${CONTRACTS_DIR}kv_write.contract.json`);
    const shapes = { k: [2, 2, 16], v: [2, 2, 16], kCache: [64, 2, 16], vCache: [64, 2, 16] };
    expect(() => resolveContract(c, { shapes, dtypes: { kCache: 'float32', vCache: 'float32' }, attributes: { start_pos: 63 }, device: swiftshader, kernels })).toThrow(ContractInputError);
    expect(() => resolveContract(c, { shapes, dtypes: { kCache: 'float32', vCache: 'float32' }, attributes: { start_pos: 63 }, device: swiftshader, kernels })).toThrow(/attribute start_pos: value 63 is outside \[0, 62\]/);
  });

  it('template contexts leave dynamic attributes out (a shader must not bake them in)', () => {
    const c: KernelContract = loadContract(`${CONTRACTS_DIR}take_rows.contract.json`);
    const p = resolveContract(c, { shapes: { x: [8, 32] }, attributes: { count: 2 }, device: swiftshader, kernels });
    const ctx = templateContext(p, p.passes[0]!);
    expect(ctx.attrs).toEqual({ count: 2 });
    expect(Object.keys(p.derived)).not.toContain('first');
  });
});
