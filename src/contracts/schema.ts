/**
 * Loading and validating kernel contracts: JSON Schema (spec/kernel-contract.schema.json, ajv), then
 * cross-references (bindings, intermediates, type constraints) and a parse of every expression, so a
 * malformed contract fails at load with the file and JSON path instead of during planning.
 * No Node APIs here (browser-safe); reading files is in load.ts.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import schema from '../../spec/kernel-contract.schema.json' with { type: 'json' };
import { BUILTINS, compile, ExprError, type ExprSource } from '../expr/index.ts';
import { ContractSchemaError } from './errors.ts';
import { bundledLookup, resolveContractSource, type BaseLookup } from './extends.ts';
import { flowProblems, NAMESPACES } from './flow.ts';
import { DTYPE_BYTES, type KernelContract, type PassSpec, type ShapeSource } from './types.ts';

let validator: ValidateFunction | undefined;

type Problem = { path: string; message: string };

/** `/variants/2/passes/0` → `variants[2] (quant_split_routed).passes[0] (route_stage)`. */
function jsonPath(pointer: string, root: unknown): string {
  let out = '';
  let node: unknown = root;
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node)) {
      node = node[Number(seg)];
      const id = node && typeof node === 'object' && typeof (node as { id?: unknown }).id === 'string' ? ` (${(node as { id: string }).id})` : '';
      out += `[${seg}]${id}`;
    } else {
      node = node && typeof node === 'object' ? (node as Record<string, unknown>)[seg] : undefined;
      out += /^[A-Za-z_$][\w$]*$/.test(seg) ? `${out ? '.' : ''}${seg}` : `[${JSON.stringify(seg)}]`;
    }
  }
  return out;
}

function describe(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return `missing required property "${String(p.missingProperty)}"`;
    case 'additionalProperties':
      return `unknown property "${String(p.additionalProperty)}"`;
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(e.data)}`;
    case 'not':
    case 'oneOf': {
      const d = (e.parentSchema as { description?: string } | undefined)?.description;
      return d ? `invalid combination of properties: ${d}` : `${e.message ?? 'invalid'}`;
    }
    case 'pattern':
      return `${JSON.stringify(e.data)} must match ${String(p.pattern)}`;
    case 'propertyNames':
      return `invalid property name ${JSON.stringify(p.propertyName)}`;
    default:
      return `${e.message ?? 'invalid'}${e.data !== undefined && typeof e.data !== 'object' ? `, got ${JSON.stringify(e.data)}` : ''}`;
  }
}

function schemaProblems(json: unknown): Problem[] {
  validator ??= new Ajv({ allErrors: true, verbose: true, strict: true, strictRequired: false, allowUnionTypes: true }).compile(schema);
  if (validator(json)) return [];
  const errors = validator.errors ?? [];
  // Drop if/then wrappers, and errors inside oneOf/not branches when the branch's parent reports itself.
  const umbrella = errors.filter((e) => e.keyword === 'oneOf' || e.keyword === 'not').map((e) => e.schemaPath);
  const out: Problem[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    if (umbrella.some((u) => e.schemaPath !== u && e.schemaPath.startsWith(`${u}/`))) continue;
    const prob = { path: jsonPath(e.instancePath, json), message: describe(e) };
    const key = `${prob.path}\n${prob.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(prob);
    }
  }
  return out;
}

function checkExpr(src: ExprSource | undefined, path: string, out: Problem[]): void {
  if (typeof src !== 'string') return;
  try {
    compile(src);
  } catch (e) {
    if (!(e instanceof ExprError)) throw e;
    out.push({ path, message: `expression does not parse: ${e.message}` });
  }
}
function checkShape(src: ShapeSource, path: string, out: Problem[]): void {
  if (typeof src === 'string') checkExpr(src, path, out);
  else src.forEach((d, i) => checkExpr(d, `${path}[${i}]`, out));
}
/** Names expressions read from the scope: a derived name equal to one of them would shadow it. */
const SCOPE_NAMESPACES = NAMESPACES;

function checkDerive(map: Readonly<Record<string, ExprSource>> | undefined, path: string, out: Problem[]): void {
  for (const [k, v] of Object.entries(map ?? {})) {
    if (k in BUILTINS) out.push({ path: `${path}.${k}`, message: `derived name "${k}" shadows the builtin function ${k}(); rename it` });
    if (SCOPE_NAMESPACES.has(k)) out.push({ path: `${path}.${k}`, message: `derived name "${k}" shadows the "${k}" namespace; rename it` });
    checkExpr(v, `${path}.${k}`, out);
  }
}

/** Cross-reference checks and expression parsing (after the schema passed). */
function semanticProblems(c: KernelContract): Problem[] {
  const out: Problem[] = [];
  const tcs = c.typeConstraints ?? {};
  const dtypeOk = (d: string) => d in tcs || d in DTYPE_BYTES;
  for (const [k, v] of Object.entries(c.inputs)) {
    if (!dtypeOk(v.dtype)) out.push({ path: `inputs.${k}.dtype`, message: `"${v.dtype}" is neither a typeConstraints name (${Object.keys(tcs).join(', ') || 'none'}) nor a dtype` });
  }
  for (const [k, v] of Object.entries(c.outputs)) {
    if (!dtypeOk(v.dtype)) out.push({ path: `outputs.${k}.dtype`, message: `"${v.dtype}" is neither a typeConstraints name nor a dtype` });
    if (k in c.inputs) out.push({ path: `outputs.${k}`, message: `output "${k}" has the same name as an input` });
    checkShape(v.shape, `outputs.${k}.shape`, out);
  }
  for (const k of Object.keys(c.attributeConstraints ?? {})) {
    if (!(k in (c.attributes ?? {}))) out.push({ path: `attributeConstraints.${k}`, message: `constrains "${k}", which is not declared in attributes` });
  }
  checkDerive(c.derive, 'derive', out);
  const tensors = new Set([...Object.keys(c.inputs), ...Object.keys(c.outputs)]);
  const bindings = c.bindings ?? {};
  for (const [k, b] of Object.entries(bindings)) {
    if (b.arg !== undefined && !tensors.has(b.arg)) out.push({ path: `bindings.${k}.arg`, message: `"${b.arg}" is not an input or output (${[...tensors].join(', ')})` });
    b.struct?.forEach((f, i) => checkExpr(f.value, `bindings.${k}.struct[${i}].value`, out));
  }
  const variantIds = new Set<string>();
  c.variants.forEach((v, vi) => {
    const vp = `variants[${vi}] (${v.id})`;
    if (variantIds.has(v.id)) out.push({ path: `${vp}.id`, message: `duplicate variant id "${v.id}"` });
    variantIds.add(v.id);
    (v.when ?? []).forEach((w, i) => checkExpr(w, `${vp}.when[${i}]`, out));
    checkDerive(v.derive, `${vp}.derive`, out);
    const scratch = new Set<string>();
    (v.intermediates ?? []).forEach((m, i) => {
      if (scratch.has(m.id)) out.push({ path: `${vp}.intermediates[${i}].id`, message: `duplicate intermediate id "${m.id}"` });
      scratch.add(m.id);
      checkShape(m.shape, `${vp}.intermediates[${i}].shape`, out);
    });
    const walkPasses = (passes: readonly PassSpec[], base: string) => {
      const ids = new Set<string>();
      passes.forEach((p, pi) => {
        const pp = `${base}[${pi}] (${p.id})`;
        if (ids.has(p.id)) out.push({ path: `${pp}.id`, message: `duplicate pass id "${p.id}" in the same list` });
        ids.add(p.id);
        checkDerive(p.derive, `${pp}.derive`, out);
        for (const axis of ['x', 'y', 'z'] as const) checkExpr(p.dispatch?.[axis], `${pp}.dispatch.${axis}`, out);
        if (p.repeat) checkExpr(p.repeat.count, `${pp}.repeat.count`, out);
        for (const [f, e] of Object.entries(p.uniforms ?? {})) checkExpr(e, `${pp}.uniforms.${f}`, out);
        (p.bindings ?? []).forEach((b, bi) => {
          const bp = `${pp}.bindings[${bi}]`;
          const spec = typeof b === 'string' ? bindings[b] : b;
          if (!spec) return void out.push({ path: bp, message: `unknown binding "${String(b)}"; declare it under "bindings"` });
          if (typeof b !== 'string') b.struct?.forEach((f, i) => checkExpr(f.value, `${bp}.struct[${i}].value`, out));
          if (spec.arg !== undefined && typeof b !== 'string' && !tensors.has(spec.arg)) out.push({ path: `${bp}.arg`, message: `"${spec.arg}" is not an input or output` });
          if (spec.scratch !== undefined && !scratch.has(spec.scratch)) {
            out.push({ path: bp, message: `binding "${typeof b === 'string' ? b : spec.name}" uses scratch "${spec.scratch}", which this variant does not declare in intermediates` });
          }
        });
        for (const [slot, target] of Object.entries(p.buffers ?? {})) {
          if (!(target in bindings) && !tensors.has(target) && !scratch.has(target)) {
            out.push({ path: `${pp}.buffers.${slot}`, message: `"${target}" is not a binding, input/output or intermediate of this variant` });
          }
        }
        if (p.passes) walkPasses(p.passes, `${pp}.passes`);
      });
    };
    walkPasses(v.passes, `${vp}.passes`);
  });
  if (out.length === 0) flowProblems(c, out);
  return out;
}

/**
 * Validates parsed JSON as a kernel contract; `source` (a file name) prefixes every error. A contract that
 * "extends" a base or gives "passDefaults" is resolved first (src/contracts/extends.ts; `lookup` finds bases, by
 * default the bundled ones): the contract returned is the resolved one.
 */
export function validateContract(json: unknown, source = 'kernel contract', lookup: BaseLookup = bundledLookup): KernelContract {
  json = resolveContractSource(json, source, lookup);
  const problems = schemaProblems(json);
  if (problems.length) throw new ContractSchemaError(source, problems);
  const c = json as KernelContract;
  const more = semanticProblems(c);
  if (more.length) throw new ContractSchemaError(source, more);
  return c;
}
