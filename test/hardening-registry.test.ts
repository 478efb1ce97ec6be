/**
 * Registry lint (issue 8, item 6): binding indices beyond WebGPU's limits and keys repeated in the JSON text
 * (JSON.parse keeps only the last) are errors naming operation, variant and binding, or the JSON path; reported by
 * the loader and by `tessera kernels lint`.
 */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RegistryError } from '../src/registry/errors.ts';
import { findDuplicateKeys } from '../src/registry/json-keys.ts';
import { DEFAULT_REGISTRY_PATH, loadRegistry } from '../src/node/registry.ts';
import { parseRegistry } from '../src/registry/parse.ts';
import { tessera } from './helpers/cli.ts';

const text = readFileSync(DEFAULT_REGISTRY_PATH, 'utf8');
const raw = () => JSON.parse(text);

function problems(json: unknown): string[] {
  try {
    parseRegistry(json, 'BAD.json');
  } catch (e) {
    expect(e).toBeInstanceOf(RegistryError);
    return (e as RegistryError).problems.map((p) => `${p.where}: ${p.message}`);
  }
  throw new Error('expected a RegistryError');
}

function tmpFile(content: string): string {
  const f = join(mkdtempSync(join(tmpdir(), 'tessera-reg-')), 'registry.json');
  writeFileSync(f, content);
  return f;
}

describe('binding indices within WebGPU limits', () => {
  it.each([5000, 2 ** 40, 1000])('base binding index %d is an error naming the operation and binding', (index) => {
    const r = raw();
    r.operations.rmsnorm.baseBindings[1].index = index;
    const name = r.operations.rmsnorm.baseBindings[1].name;
    expect(problems(r)).toContain(
      `rmsnorm.baseBindings[${index}] ("${name}"): binding index ${index} is beyond the WebGPU limit: indices must be below maxBindingsPerBindGroup, whose guaranteed minimum is 1000; renumber the binding`,
    );
  });

  it('an override index names the variant, once', () => {
    const r = raw();
    r.operations.scatter_add.variants.dynamic_expert_scale.bindingsOverride.push({ index: 2 ** 40, name: 'far', type: 'storage' });
    const p = problems(r).filter((m) => m.includes('far'));
    expect(p).toEqual([expect.stringMatching(/^scatter_add\.dynamic_expert_scale\.bindingsOverride\[1099511627776\] \("far"\): binding index 1099511627776 is beyond/)]);
  });

  it('index 999 is fine; the shipped registry has no such problem', () => {
    const r = raw();
    r.operations.rmsnorm.baseBindings[1].index = 999;
    expect(() => parseRegistry(r, 'ok.json')).not.toThrow();
    expect(loadRegistry().operations.size).toBe(93);
  });
});

describe('duplicate keys in the registry JSON', () => {
  it('findDuplicateKeys reports each repeated key with its path', () => {
    expect(findDuplicateKeys('{"a": 1, "b": {"c": [1, {"d": 1, "d": 2}], "c": 3}, "a\\u0062": 0, "ab": 1}')).toEqual([
      { path: 'b.c[1].d', key: 'd' },
      { path: 'b.c', key: 'c' },
      { path: 'ab', key: 'ab' },
    ]);
    expect(findDuplicateKeys('{"x": "{\\"y\\": 1, \\"y\\": 2}", "k.1": {"k": 1}, "k.1 ": 2}')).toEqual([]);
    expect(findDuplicateKeys(text)).toEqual([]);
  });

  it('the loader refuses a duplicated variant field, naming the path', () => {
    const i = text.indexOf('"entryPoint"');
    const line = text.slice(text.lastIndexOf('\n', i) + 1, text.indexOf('\n', i) + 1);
    const dup = text.replace(line, line + line);
    expect(() => loadRegistry(tmpFile(dup))).toThrow(RegistryError);
    expect(() => loadRegistry(tmpFile(dup))).toThrow(/operations\.[a-z_0-9]+\.variants\.[a-z_0-9]+\.entryPoint: duplicate key "entryPoint" \(JSON\.parse keeps only the last value; remove or rename one\)/);
  });

  it('a duplicated operation (the second silently replacing the first) is reported with other errors', () => {
    const r = raw();
    r.operations.rmsnorm.baseBindings[1].index = 5000;
    const json = JSON.stringify(r, null, 1).replace('"operations": {', `"operations": {\n "rmsnorm": ${JSON.stringify(raw().operations.rmsnorm)},`);
    try {
      loadRegistry(tmpFile(json));
      throw new Error('expected a RegistryError');
    } catch (e) {
      const where = (e as RegistryError).problems.map((p) => p.where);
      expect(where).toContain('operations.rmsnorm');
      expect(where.some((w) => w.startsWith('rmsnorm.baseBindings[5000]'))).toBe(true);
    }
  });
});

describe('tessera kernels lint', () => {
  it('reports a far binding index and a duplicate key, exit 1', async () => {
    const r = raw();
    r.operations.rmsnorm.baseBindings[1].index = 5000;
    const json = JSON.stringify(r, null, 1).replace('"version": ', '"version": "dup", "version": ');
    const f = tmpFile(json);
    const out = await tessera('kernels', 'lint', '--registry', f);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('error: version: duplicate key "version"');
    expect(out.stderr).toMatch(/error: rmsnorm\.baseBindings\[5000\] \("[a-z_]+"\): binding index 5000 is beyond the WebGPU limit/);
    expect(out.stderr).toContain(`${f}: 2 errors`);
    const j = await tessera('kernels', 'lint', '--registry', f, '--json');
    expect(JSON.parse(j.stdout).errors).toHaveLength(2);
  });

  it('the shipped registry lints clean', async () => {
    const out = await tessera('kernels', 'lint');
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/93 operations, 302 variants, 0 errors/);
  });
});
