import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContractSchemaError, validateContract } from '../src/contracts/index.ts';
import { loadContract } from '../src/node/contracts.ts';
import { caught, QMOE_PATH } from './contracts-helpers.ts';
import { readFileSync } from 'node:fs';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
const fresh = (): Json => JSON.parse(readFileSync(QMOE_PATH, 'utf8'));
function problems(edit: (c: Json) => void): ContractSchemaError {
  const c = fresh();
  edit(c);
  return caught(() => validateContract(c, 'bad.contract.json'), ContractSchemaError);
}

describe('contract schema', () => {
  it('accepts the QMoE contract', () => {
    expect(validateContract(fresh(), 'qmoe').name).toBe('QMoE');
  });

  it('rejects a variant without passes, naming the file and JSON path', () => {
    const e = problems((c) => delete c.variants[0].passes);
    expect(e.message).toBe('bad.contract.json: invalid kernel contract (1 problem):\n  variants[0] (quant_zero_inter): missing required property "passes"');
    expect(e.source).toBe('bad.contract.json');
    expect(e.problems).toEqual([{ path: 'variants[0] (quant_zero_inter)', message: 'missing required property "passes"' }]);
  });

  it('names a file loaded from disk, and unreadable/invalid JSON', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-contract-'));
    const file = join(dir, 'broken.contract.json');
    const c = fresh();
    c.variants[2].passes[1].passes[0].dispatch = { y: 1 };
    writeFileSync(file, JSON.stringify(c));
    const e = caught(() => loadContract(file), ContractSchemaError);
    expect(e.message).toContain(`${file}: invalid kernel contract`);
    expect(e.message).toContain('variants[2] (quant_grouped_routed).passes[1] (token_chunks).passes[0] (group_stage).dispatch: missing required property "x"');
    writeFileSync(file, '{ "name": ');
    expect(caught(() => loadContract(file), ContractSchemaError).message).toContain(`${file}: invalid kernel contract (1 problem):\n  (root): not valid JSON`);
    expect(caught(() => loadContract(join(dir, 'missing.json')), ContractSchemaError).message).toContain('cannot read file');
  });

  it('rejects pass shapes that mix forms (shader + kernel, repeat + shader)', () => {
    const a = problems((c) => (c.variants[0].passes[0].kernel = 'matmul.f16'));
    expect(a.message).toContain('passes[0] (output_stage): invalid combination of properties: a registry-kernel pass has "kernel", "buffers", "dispatch"');
    const b = problems((c) => (c.variants[4].passes[1].shader = 'x.wgsl'));
    expect(b.message).toContain('variants[4] (quant_split_routed).passes[1] (token_chunks): invalid combination of properties: a repeat group has "id", "repeat", "passes"');
  });

  it('rejects unknown properties, wrong types, bad dtypes and bindings of no/two kinds', () => {
    expect(problems((c) => (c.variants[0].prioriy = 1)).message).toContain('variants[0] (quant_zero_inter): unknown property "prioriy"');
    expect(problems((c) => (c.variants[1].priority = 'high')).message).toContain('variants[1] (quant_grouped_sgmat_routed).priority: must be number, got "high"');
    expect(problems((c) => (c.variants[1].intermediates[0].dtype = 'uint33')).message).toContain('intermediates[0] (routeExpert).dtype: must be one of "float64"');
    expect(problems((c) => (c.bindings.output.scratch = 'x')).message).toContain('bindings.output: invalid combination of properties: a binding has exactly one of "arg"');
  });

  it('parses every expression at load time and reports the path with a caret', () => {
    const e = problems((c) => (c.derive.foo = 'a +* b'));
    expect(e.message).toContain('derive.foo: expression does not parse: unexpected "*" at 3\n  a +* b\n     ^');
    expect(problems((c) => (c.variants[3].when[0] = 'decodeContract and')).message).toContain('variants[3] (quant_gemv_routed).when[0]: expression does not parse: unexpected end of expression at 18');
  });

  it('checks cross-references: bindings, scratch declared by the variant, args, type constraints', () => {
    expect(problems((c) => c.variants[0].passes[0].bindings.push('nosuch')).message).toContain('passes[0] (output_stage).bindings[1]: unknown binding "nosuch"; declare it under "bindings"');
    expect(problems((c) => c.variants[0].passes[0].bindings.push('route_mix')).message).toContain('binding "route_mix" uses scratch "routeMix", which this variant does not declare in intermediates');
    expect(problems((c) => (c.bindings.output.arg = 'outT')).message).toContain('bindings.output.arg: "outT" is not an input or output');
    expect(problems((c) => (c.inputs.fc1T.dtype = 'T9')).message).toContain('inputs.fc1T.dtype: "T9" is neither a typeConstraints name (T, T1, T2) nor a dtype');
    expect(problems((c) => (c.variants[1].id = c.variants[0].id)).message).toContain('duplicate variant id "quant_zero_inter"');
  });
});

describe('derived names that would shadow the language', () => {
  it('a derived name equal to a builtin function or a scope namespace is refused, naming it', () => {
    const base = {
      name: 'Shadow',
      inputs: { x: { dtype: 'float32' } },
      outputs: { y: { dtype: 'float32', shape: 'shapes.x' } },
      variants: [{ id: 'v', priority: 1, passes: [{ id: 'p', shader: 's.wgsl.jinja', bindings: [], dispatch: { x: '1' } }] }],
    };
    const dimErr = (() => {
      try {
        validateContract({ ...base, derive: { dim: 'dim(shapes.x, 0)' } }, 'shadow.json');
      } catch (e) {
        return e as Error;
      }
    })();
    expect(dimErr).toBeInstanceOf(ContractSchemaError);
    expect(dimErr!.message).toContain('derive.dim: derived name "dim" shadows the builtin function dim(); rename it');
    expect(() => validateContract({ ...base, derive: { shapes: '1' } }, 'shadow.json')).toThrow(/derived name "shapes" shadows the "shapes" namespace/);
    expect(() => validateContract({ ...base, derive: { width: 'dim(shapes.x, 0)' } }, 'ok.json')).not.toThrow();
  });
});
