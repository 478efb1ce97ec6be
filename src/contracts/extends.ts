/**
 * Contract inheritance and per-kernel pass defaults, resolved before validation (browser-safe: no file access here).
 *
 *   "extends": "qmoe.contract.json"   the base contract (a file next to this one, or a bundled base by that name)
 *                  (bundled: spec/qmoe.contract.json as "qmoe.contract.json", and the op contracts' bases,
 *                  src/ops/contracts/bases/<file>, as "bases/<file>": op contracts are bundled, so their bases are too)
 *   "passDefaults": { "<shader or registry kernel>": { "bindings": [...], "uniforms": {...}, "buffers": {...}, ... } }
 *                  (keys: a shader file, a registry kernel "operation.variant", "operation.*" for every kernel of an
 *                  operation, or "*" for every pass that names a shader or kernel; the more specific wins by key)
 *
 * Merge rules (the child is the file that says "extends"):
 *   - scalars (domain, name, sinceVersion, description): the child's value when it gives one;
 *   - map sections (inputs, outputs, attributes, attributeConstraints, typeConstraints, tunables, derive, bindings,
 *     passDefaults): merged by key; a child entry replaces the base's entry whole; `null` removes it. A passDefaults
 *     entry both give is merged one level further: its `uniforms`, `buffers` and `derive` by key (the child's keys
 *     win, `null` removes one), its other properties replaced. Order: the
 *     base's keys keep their places (a replaced entry stays where the base had it); a key only the child has goes
 *     right before the next key of the child's section that the base also has, else at the end. (Order matters for
 *     `inputs`: ONNX inputs are positional. To place a new input, name its successor too.)
 *   - variants: merged by id with the same placement rule; a child variant replaces the base's variant of that id.
 * Pass defaults (the merged passDefaults) then fill every pass that names that shader or kernel, at any depth:
 *   a property the pass gives wins; `uniforms`, `buffers` and `derive` merge by key (the pass's keys win).
 * The result has neither "extends" nor "passDefaults": it is the contract as if written out in full.
 */
import { ContractSchemaError } from './errors.ts';
import qmoeSeed from '../../spec/qmoe.contract.json' with { type: 'json' };
import gemvQ8aBase from '../ops/contracts/bases/gemv-q8a.base.json' with { type: 'json' };

type Json = Record<string, unknown>;
type Problem = { path: string; message: string };

/**
 * Base contracts available without a file system, by the name an "extends" gives. An op contract's base,
 * src/ops/contracts/bases/<file>, is named "bases/<file>": the same path resolves next to the contract file on disk.
 */
export const BUNDLED_BASES: Readonly<Record<string, unknown>> = { 'qmoe.contract.json': qmoeSeed, 'bases/gemv-q8a.base.json': gemvQ8aBase };

/** Finds the JSON of a base contract by the name an "extends" gives (undefined: unknown). */
export type BaseLookup = (name: string) => { json: unknown; source: string; lookup?: BaseLookup } | undefined;

const MAP_SECTIONS = ['inputs', 'outputs', 'attributes', 'attributeConstraints', 'typeConstraints', 'tunables', 'derive', 'bindings', 'passDefaults'] as const;
const PASS_DEFAULT_KEYS = new Set(['name', 'description', 'bindings', 'uniforms', 'buffers', 'dispatch', 'derive']);
const MERGED_PASS_KEYS = new Set(['uniforms', 'buffers', 'derive']);
const MAX_DEPTH = 8;

const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

/** Ordered merge of two key lists (see the file comment). */
function mergedOrder(base: readonly string[], child: readonly string[]): string[] {
  const inBase = new Set(base);
  const before = new Map<string, string[]>(); // base key -> child-only keys placed right before it
  const tail: string[] = [];
  let pending: string[] = [];
  for (const k of child) {
    if (inBase.has(k)) {
      if (pending.length) before.set(k, [...(before.get(k) ?? []), ...pending]);
      pending = [];
    } else pending.push(k);
  }
  tail.push(...pending);
  const out: string[] = [];
  for (const k of base) out.push(...(before.get(k) ?? []), k);
  return [...out, ...tail];
}

function mergeMap(base: unknown, child: unknown): unknown {
  if (!isObject(base) || !isObject(child)) return child; // malformed: the schema reports the child's value
  const out: Json = {};
  for (const k of mergedOrder(Object.keys(base), Object.keys(child))) {
    const v = k in child ? child[k] : base[k];
    if (v !== null) out[k] = v;
  }
  return out;
}

function mergeVariants(base: unknown, child: unknown): unknown {
  if (!Array.isArray(base) || !Array.isArray(child)) return child;
  const id = (v: unknown, i: number) => (isObject(v) && typeof v.id === 'string' ? v.id : `\u0000${i}`);
  const b = new Map(base.map((v, i) => [id(v, i), v] as const));
  const c = new Map(child.map((v, i) => [id(v, i), v] as const));
  return mergedOrder([...b.keys()], [...c.keys()]).map((k) => (c.has(k) ? c.get(k) : b.get(k)));
}

/** passDefaults: entries merged by key; an entry both give merges its uniforms, buffers and derive by key too. */
function mergePassDefaults(base: unknown, child: unknown): unknown {
  const out = mergeMap(base, child);
  if (!isObject(base) || !isObject(child) || !isObject(out)) return out;
  for (const [name, c] of Object.entries(child)) {
    const b = base[name];
    if (!isObject(b) || !isObject(c)) continue;
    const entry: Json = {};
    for (const k of mergedOrder(Object.keys(b), Object.keys(c))) {
      const v = !(k in c) ? b[k] : k in b && MERGED_PASS_KEYS.has(k) ? mergeMap(b[k], c[k]) : c[k];
      if (v !== null) entry[k] = v;
    }
    out[name] = entry;
  }
  return out;
}

/** child over base (neither carries "extends" any more). */
function mergeContracts(base: Json, child: Json): Json {
  const out: Json = {};
  for (const k of mergedOrder(Object.keys(base), Object.keys(child))) {
    if (!(k in child)) out[k] = base[k];
    else if (!(k in base)) out[k] = child[k];
    else if (k === 'passDefaults') out[k] = mergePassDefaults(base[k], child[k]);
    else if ((MAP_SECTIONS as readonly string[]).includes(k)) out[k] = mergeMap(base[k], child[k]);
    else if (k === 'variants') out[k] = mergeVariants(base[k], child[k]);
    else out[k] = child[k];
  }
  return out;
}

function passDefaultsProblems(pd: unknown, out: Problem[]): void {
  if (!isObject(pd)) return void out.push({ path: 'passDefaults', message: 'expected an object: shader or registry kernel name -> pass properties' });
  for (const [name, d] of Object.entries(pd)) {
    if (!isObject(d)) {
      out.push({ path: `passDefaults[${JSON.stringify(name)}]`, message: 'expected an object of pass properties' });
      continue;
    }
    for (const k of Object.keys(d)) {
      if (!PASS_DEFAULT_KEYS.has(k)) out.push({ path: `passDefaults[${JSON.stringify(name)}].${k}`, message: `not a pass property a default may give (${[...PASS_DEFAULT_KEYS].join(', ')})` });
    }
  }
}

/** The defaults of one pass target: "*", then "<operation>.*" (registry kernels), then the exact name; later win by key. */
function defaultsFor(defaults: Json, target: string, kernel: boolean): Json | undefined {
  const keys = ['*', ...(kernel ? [`${target.split('.')[0]}.*`] : []), target].filter((k) => Object.hasOwn(defaults, k) && isObject(defaults[k]));
  if (!keys.length) return undefined;
  const out: Json = {};
  for (const k of keys) {
    for (const [f, v] of Object.entries(defaults[k] as Json)) out[f] = MERGED_PASS_KEYS.has(f) && isObject(out[f]) && isObject(v) ? { ...(out[f] as Json), ...v } : v;
  }
  return out;
}

function applyDefaults(passes: unknown, defaults: Json): unknown {
  if (!Array.isArray(passes)) return passes;
  return passes.map((p) => {
    if (!isObject(p)) return p;
    const target = typeof p.kernel === 'string' ? p.kernel : typeof p.shader === 'string' ? p.shader : undefined;
    const d = target === undefined ? undefined : defaultsFor(defaults, target, typeof p.kernel === 'string');
    let out: Json = p;
    if (d) {
      out = {};
      // the pass's own key order first, then defaulted keys in the order the default gives them
      for (const k of [...Object.keys(p), ...Object.keys(d).filter((k) => !(k in p))]) {
        if (!(k in p)) out[k] = structuredClone(d[k]);
        else if (k in d && MERGED_PASS_KEYS.has(k) && isObject(d[k]) && isObject(p[k])) out[k] = { ...structuredClone(d[k] as Json), ...(p[k] as Json) };
        else out[k] = p[k];
      }
    }
    if ('passes' in out) out = { ...out, passes: applyDefaults(out.passes, defaults) };
    return out;
  });
}

/**
 * The contract a file means: its "extends" chain merged and its pass defaults applied (see the file comment).
 * JSON without either comes back as given. Throws ContractSchemaError naming `source` and the field.
 */
export function resolveContractSource(json: unknown, source: string, lookup: BaseLookup = bundledLookup): unknown {
  if (!isObject(json) || (!('extends' in json) && !('passDefaults' in json))) return json;
  return resolve(json, source, lookup, []).contract;
}

/** The resolved contract and the pass defaults in force for it (its own over its bases'), which a child inherits. */
function resolve(json: Json, source: string, lookup: BaseLookup, chain: string[]): { contract: Json; passDefaults?: Json } {
  let merged: Json = { ...json };
  delete merged.extends;
  if ('extends' in json) {
    const ref = json.extends;
    if (typeof ref !== 'string' || !ref) throw new ContractSchemaError(source, [{ path: 'extends', message: `expected the name of a base contract, got ${JSON.stringify(ref)}` }]);
    if (chain.length >= MAX_DEPTH || chain.includes(ref)) {
      throw new ContractSchemaError(source, [{ path: 'extends', message: `"${ref}" extends itself (chain: ${[...chain, ref].join(' -> ')})` }]);
    }
    const found = lookup(ref);
    if (!found) throw new ContractSchemaError(source, [{ path: 'extends', message: `no base contract "${ref}" (bundled: ${Object.keys(BUNDLED_BASES).join(', ')}; a file path is resolved next to the contract file)` }]);
    if (!isObject(found.json)) throw new ContractSchemaError(source, [{ path: 'extends', message: `base contract "${ref}" is not a JSON object` }]);
    const base = resolve(found.json, found.source, found.lookup ?? lookup, [...chain, ref]);
    // the base's defaults were applied to its passes already; they also fill the child's passes
    merged = mergeContracts(base.passDefaults ? { ...base.contract, passDefaults: base.passDefaults } : base.contract, merged);
  }
  if (!('passDefaults' in merged)) return { contract: merged };
  const pd = merged.passDefaults;
  delete merged.passDefaults;
  const problems: Problem[] = [];
  passDefaultsProblems(pd, problems);
  if (problems.length) throw new ContractSchemaError(source, problems);
  if (Array.isArray(merged.variants)) {
    merged.variants = merged.variants.map((v) => (isObject(v) && Array.isArray(v.passes) ? { ...v, passes: applyDefaults(v.passes, pd as Json) } : v));
  }
  return { contract: merged, passDefaults: pd as Json };
}

/** Bundled bases only (browser, op contracts). */
export const bundledLookup: BaseLookup = (name) => (Object.hasOwn(BUNDLED_BASES, name) ? { json: structuredClone(BUNDLED_BASES[name]), source: name } : undefined);
