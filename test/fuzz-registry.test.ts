/**
 * Fuzz: the registry loader (JSON text -> duplicate-key scan -> schema -> layout checks -> normalized registry)
 * never crashes and throws only RegistryError, over structural and byte mutations of a slice of the shipped
 * registry (operations with binding and uniform overrides and the irregular map-style uniforms), and generated text.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { RegistryError } from '../src/registry/errors.ts';
import { findDuplicateKeys } from '../src/registry/json-keys.ts';
import { parseRegistry, parseRegistryText } from '../src/registry/parse.ts';
import { byteMutations, expectOnly, jsonMutations, mutateBytes, mutateJson } from './helpers/fuzz.ts';

const NAMED = [RegistryError];
const shipped = JSON.parse(readFileSync('spec/kernel-registry.json', 'utf8')) as { operations: Record<string, unknown> };
/** A slice of the shipped registry that keeps every irregular form (overrides, map-style uniforms, unnamed bindings). */
const slice = {
  ...shipped,
  operations: Object.fromEntries(['rmsnorm', 'soft_embedding', 'scatter_add', 'rep_penalty', 'dequant'].map((k) => [k, shipped.operations[k]])),
};
const sliceText = JSON.stringify(slice, null, 1);

/** Use every part of a loaded registry a caller would. */
function exercise(reg: ReturnType<typeof parseRegistry>): void {
  for (const op of reg.operations.values()) for (const v of op.variants.values()) reg.variant(v.id);
}

describe('fuzz: registry loader', () => {
  it('the unmutated slice loads', () => {
    expect(parseRegistryText(sliceText, 'slice.json').operations.size).toBe(5);
  });

  // 6,000 + 4,000 + 1,000 = 11,000 inputs in all.
  it('6,000 structural mutations of the shipped registry: only RegistryError', () => {
    let ok = 0;
    fc.assert(
      fc.property(jsonMutations, (muts) => {
        const json = mutateJson(slice, muts);
        expectOnly(NAMED, () => {
          exercise(parseRegistry(json, 'fuzz.json'));
          ok++;
        });
      }),
      { numRuns: 6_000 },
    );
    expect(ok).toBeGreaterThan(0);
  });

  it('4,000 byte mutations of the registry text (syntax errors, duplicated lines and keys): only RegistryError', () => {
    const bytes = new TextEncoder().encode(sliceText);
    const dec = new TextDecoder();
    fc.assert(
      fc.property(byteMutations, (muts) => {
        const text = dec.decode(mutateBytes(bytes, muts));
        expectOnly(NAMED, () => exercise(parseRegistryText(text, 'fuzz.json')));
      }),
      { numRuns: 4_000 },
    );
  });

  it('1,000 generated JSON texts (deep nesting, repeated keys): only RegistryError, and the duplicate scan agrees with a reference', () => {
    const deep = fc.nat({ max: 20_000 }).map((n) => '['.repeat(n) + ']'.repeat(n));
    const objects = fc.array(fc.tuple(fc.constantFrom('a', 'b', 'op', '"q"', 'a\\u0062', 'x.y'), fc.jsonValue({ maxDepth: 2 })), { maxLength: 6 }).map(
      (kv) => `{${kv.map(([k, v]) => `"${k}": ${JSON.stringify(v)}`).join(', ')}}`,
    );
    fc.assert(
      fc.property(fc.oneof(deep, objects, fc.string()), (text) => {
        expectOnly(NAMED, () => parseRegistryText(text, 'gen.json'));
        let valid = true;
        try {
          JSON.parse(text);
        } catch {
          valid = false;
        }
        if (valid && text.startsWith('{')) {
          // Reference: a key repeats when the decoded key list of the top object has a repeat.
          const keys = [...text.matchAll(/"((?:[^"\\]|\\.)*)":/g)].map((m) => JSON.parse(`"${m[1]}"`) as string);
          const nested = /[{[]/.test(text.slice(1));
          if (!nested) expect(findDuplicateKeys(text).length).toBe(keys.length - new Set(keys).size);
        }
      }),
      { numRuns: 1_000 },
    );
  });
});
