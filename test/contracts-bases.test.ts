/**
 * Op contract bases (src/ops/contracts/bases/*.base.json): what several op contracts would otherwise write word for
 * word, merged in by "extends" (src/contracts/extends.ts). The bases are bundled (BUNDLED_BASES), never taken for an
 * op (gen-sources bundles src/ops/contracts/*.contract.json only), resolve the same from the bundle and from disk,
 * and no contract repeats an entry of its base verbatim (the copies cannot come back).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BUNDLED_BASES, resolveContract, validateContract } from '../src/contracts/index.ts';
import { loadContract } from '../src/node/contracts.ts';
import { OP_CONTRACTS } from '../src/ops/contracts.generated.ts';
import { opContract, registryLookup } from '../src/ops/runner.ts';
import { defaultRegistry } from '../src/node/registry.ts';
import { h200 } from './contracts-helpers.ts';

type Json = Record<string, any>;
const DIR = 'src/ops/contracts';
const json = (f: string) => JSON.parse(readFileSync(f, 'utf8')) as Json;
const BASES = readdirSync(`${DIR}/bases`).filter((f) => f.endsWith('.base.json'));
/** Op contracts that extend a base, by op name. */
const CHILDREN = Object.fromEntries(
  readdirSync(DIR)
    .filter((f) => f.endsWith('.contract.json'))
    .map((f) => [f.slice(0, -'.contract.json'.length), json(`${DIR}/${f}`)] as const)
    .filter(([, c]) => typeof c.extends === 'string'),
);
const GEMV = 'bases/gemv-q8a.base.json';
const GEMV_CHILDREN = ['linear', 'linear_fused', 'linear_glu_q8', 'linear_q8', 'linear_rope_kv'];
const MAP_SECTIONS = ['inputs', 'outputs', 'attributes', 'attributeConstraints', 'typeConstraints', 'tunables', 'derive', 'bindings', 'passDefaults'];

describe('op contract bases', () => {
  it('every base file is bundled as "bases/<file>", as on disk, and none is an op', () => {
    expect(BASES).toContain('gemv-q8a.base.json');
    for (const f of BASES) expect(BUNDLED_BASES[`bases/${f}`], f).toEqual(json(`${DIR}/bases/${f}`));
    for (const name of Object.keys(OP_CONTRACTS)) expect(name).not.toMatch(/base/);
  });

  it('linear, linear_fused, linear_glu_q8, linear_q8 and linear_rope_kv extend the gemv-q8a base and resolve with it', () => {
    expect(Object.entries(CHILDREN).filter(([, c]) => c.extends === GEMV).map(([n]) => n).sort()).toEqual(GEMV_CHILDREN);
    const base = json(`${DIR}/${GEMV}`);
    for (const name of GEMV_CHILDREN) {
      const c = opContract(name);
      const own = CHILDREN[name]!;
      expect(c, name).not.toHaveProperty('extends');
      expect(c, name).not.toHaveProperty('passDefaults');
      // a child's entry wins; its null removes the base's (linear_q8's rowsQuantBytes: it stages no activations)
      for (const [k, v] of Object.entries(base.derive as Json)) expect(c.derive?.[k], `${name} derive.${k}`).toEqual(own.derive && Object.hasOwn(own.derive, k) ? (own.derive[k] ?? undefined) : v);
      for (const [k, v] of Object.entries(base.tunables as Json)) expect(c.tunables?.[k], `${name} tunables.${k}`).toEqual(own.tunables?.[k] ?? v);
      // the base's pass defaults fill the contract's gemv-q8a passes (a pass's own derive entry wins)
      const passes = c.variants.flatMap((v) => v.passes).filter((p) => p.shader === 'gemv-q8a.wgsl.jinja');
      expect(passes.length, name).toBeGreaterThan(0);
      for (const p of passes) for (const k of Object.keys(base.passDefaults['gemv-q8a.wgsl.jinja'].derive)) expect(p.derive, `${name} ${p.id}`).toHaveProperty(k);
      // the same through a file path (the base next to the contract file) and through the raw JSON (bundled base)
      expect(loadContract(`${DIR}/${name}.contract.json`), name).toEqual(c);
      expect(validateContract(json(`${DIR}/${name}.contract.json`), name), name).toEqual(c);
    }
  });

  it('no contract repeats an entry of its base verbatim', () => {
    const repeated: string[] = [];
    for (const [name, c] of Object.entries(CHILDREN)) {
      const base = BUNDLED_BASES[c.extends] as Json | undefined;
      if (!base) continue; // a base outside the bundle (qmoe's) is checked by its own tests
      for (const sec of MAP_SECTIONS) {
        for (const [k, v] of Object.entries((c[sec] ?? {}) as Json)) {
          if (base[sec] && Object.hasOwn(base[sec], k) && JSON.stringify(base[sec][k]) === JSON.stringify(v)) repeated.push(`${name}: ${sec}.${k}`);
        }
      }
      // a pass-defaults entry both give merges by key (derive, uniforms, buffers): none of its keys repeats the base's
      for (const [target, entry] of Object.entries((c.passDefaults ?? {}) as Record<string, Json>)) {
        for (const prop of ['derive', 'uniforms', 'buffers']) {
          const b = base.passDefaults?.[target]?.[prop] as Json | undefined;
          for (const [k, v] of Object.entries((entry?.[prop] ?? {}) as Json)) {
            if (b && Object.hasOwn(b, k) && JSON.stringify(b[k]) === JSON.stringify(v)) repeated.push(`${name}: passDefaults[${target}].${prop}.${k}`);
          }
        }
      }
    }
    expect(repeated).toEqual([]);
  });

  it("a contract's own entry wins over its base's (linear_glu_q8's rowsQuantBytes counts its gate|up staging)", () => {
    const base = json(`${DIR}/${GEMV}`);
    const own = CHILDREN.linear_glu_q8!.derive.rowsQuantBytes as string;
    expect(own).not.toBe(base.derive.rowsQuantBytes);
    expect(own).toContain('2 * tunables.gemvRowBlock');
    expect(opContract('linear_glu_q8').derive!.rowsQuantBytes).toBe(own);
    expect(opContract('linear_fused').derive!.rowsQuantBytes).toBe(base.derive.rowsQuantBytes);
  });

  it('the order of derived names carries no meaning (a base puts its names first)', () => {
    const kernels = registryLookup(defaultRegistry());
    const c = opContract('linear');
    const reversed = { ...c, derive: Object.fromEntries(Object.entries(c.derive!).reverse()) };
    const cases: [string, Record<string, number>][] = [['q8_0', {}], ['q6_k', {}], ['q8_0', { gemvRowBlock: 32, gemvTeams: 2 }], ['q4_k', {}]];
    for (const [dtype, tunables] of cases) {
      const opts = { shapes: { x: [1, 4096], w: [4096, 4096] }, dtypes: { w: dtype }, tunables, device: h200, kernels };
      const a = resolveContract(c, opts);
      expect(resolveContract(reversed, opts), dtype).toEqual(a);
      if (dtype !== 'q4_k') expect(a.variant).toMatch(/_rows$/);
    }
  });
});
