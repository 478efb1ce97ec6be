/**
 * Normalizes a resolve request against a contract: shapes (known inputs, ranks, non-negative integer
 * dims), dtypes (known, allowed by the type constraint, consistent per type variable), attributes
 * (known, defaults applied, allowed values), tunables (known, defaults applied). Errors are
 * ContractInputError naming the input/attribute and the allowed values.
 */
import { deepEqual, formatValue, suggest } from '../expr/index.ts';
import { ContractInputError } from './errors.ts';
import { DTYPE_BYTES, type AttributeValue, type KernelContract } from './types.ts';

export type TunableValue = number | string | boolean;

export interface NormalizedInputs {
  shapes: Record<string, readonly number[]>;
  ranks: Record<string, number>;
  dtypes: Record<string, string>;
  /** Type variable → chosen dtype (e.g. T → float32). */
  typeVars: Record<string, string>;
  attrs: Record<string, AttributeValue>;
  tunables: Record<string, TunableValue>;
}

const list = (xs: Iterable<string>) => [...xs].join(', ');

export function normalizeInputs(
  c: KernelContract,
  label: string,
  req: {
    shapes: Readonly<Record<string, readonly number[]>>;
    dtypes?: Readonly<Record<string, string>>;
    attributes?: Readonly<Record<string, AttributeValue>>;
    tunables?: Readonly<Record<string, TunableValue>>;
  },
): NormalizedInputs {
  const fail = (subject: string, detail: string): never => {
    throw new ContractInputError(label, subject, detail);
  };
  const inputNames = Object.keys(c.inputs);

  const shapes: Record<string, readonly number[]> = {};
  const ranks: Record<string, number> = {};
  for (const [name, shape] of Object.entries(req.shapes)) {
    if (shape === undefined) continue;
    if (!(name in c.inputs) && !(name in c.outputs)) {
      fail(`shape "${name}"`, `not an input of ${c.name}${suggest(name, inputNames)}; inputs are ${list(inputNames)}`);
    }
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
      fail(`input ${name}`, `shape must be a list of non-negative integers, got ${formatValue(shape)}`);
    }
  }
  const required = inputNames.filter((n) => !c.inputs[n]!.optional);
  for (const [name, inp] of Object.entries(c.inputs)) {
    const shape = req.shapes[name];
    if (shape === undefined && inp.optional) continue; // an absent optional input: no shape, rank or dtype
    if (shape === undefined) fail(`input ${name}`, `missing shape${inp.onnx ? ` (ONNX input "${inp.onnx}")` : ''}; give a shape for every required input: ${list(required)}`);
    if (inp.rank !== undefined && shape!.length !== inp.rank) {
      fail(`input ${name}`, `must have rank ${inp.rank}, got shape ${formatValue(shape)} (rank ${shape!.length})`);
    }
    shapes[name] = [...shape!];
    ranks[name] = shape!.length;
  }

  const tcs = c.typeConstraints ?? {};
  const typeVars: Record<string, string> = {};
  const dtypes: Record<string, string> = {};
  for (const name of Object.keys(req.dtypes ?? {})) {
    if (!(name in c.inputs) && !(name in c.outputs)) fail(`dtype "${name}"`, `not an input of ${c.name}${suggest(name, inputNames)}; inputs are ${list(inputNames)}`);
  }
  for (const [name, inp] of Object.entries(c.inputs)) {
    if (!(name in shapes)) {
      if (req.dtypes?.[name] !== undefined) fail(`input ${name}`, `dtype given, but the optional input has no shape (leave both out when the input is absent)`);
      continue;
    }
    const allowed = tcs[inp.dtype] ?? [inp.dtype];
    let dt = req.dtypes?.[name];
    if (dt === undefined) {
      dt = typeVars[inp.dtype] ?? (allowed.length === 1 ? allowed[0] : inp.defaultDtype);
      if (dt === undefined) fail(`input ${name}`, `dtype not given and type constraint ${inp.dtype} allows ${list(allowed)}; pass one`);
    }
    if (!(dt! in DTYPE_BYTES)) fail(`input ${name}`, `unknown dtype "${dt}"${suggest(dt!, Object.keys(DTYPE_BYTES))}; known dtypes: ${list(Object.keys(DTYPE_BYTES))}`);
    if (!allowed.includes(dt!)) {
      fail(`input ${name}`, `dtype ${dt} is not allowed${inp.dtype in tcs ? ` by type constraint ${inp.dtype}` : ''}; allowed: ${list(allowed)}`);
    }
    const bound = typeVars[inp.dtype];
    if (bound !== undefined && bound !== dt) {
      const other = Object.keys(c.inputs).find((k) => c.inputs[k]!.dtype === inp.dtype && dtypes[k] === bound);
      fail(`input ${name}`, `dtype ${dt} conflicts with ${other} (${bound}); all inputs of type ${inp.dtype} must share one dtype`);
    }
    if (inp.dtype in tcs) typeVars[inp.dtype] = dt!;
    dtypes[name] = dt!;
  }
  for (const [name, out] of Object.entries(c.outputs)) {
    let dt = out.dtype in tcs ? (typeVars[out.dtype] ?? (tcs[out.dtype]!.length === 1 ? tcs[out.dtype]![0] : undefined)) : out.dtype;
    const given = req.dtypes?.[name];
    if (dt === undefined) {
      // A type variable no input binds (e.g. the output dtype of a gather): the dtype given for the output, else the
      // first dtype the constraint allows; other outputs of that type share it.
      const allowed = tcs[out.dtype]!;
      if (given !== undefined && !allowed.includes(given)) fail(`output ${name}`, `dtype ${given} is not allowed by type constraint ${out.dtype}; allowed: ${list(allowed)}`);
      dt = given ?? allowed[0];
      if (dt === undefined) fail(`output ${name}`, `dtype ${out.dtype} is not bound by any input; pass --dtypes ${name}=...`);
      typeVars[out.dtype] = dt!;
    }
    if (given !== undefined && given !== dt) fail(`output ${name}`, `dtype ${given} given, but the contract makes it ${dt}`);
    dtypes[name] = dt!;
  }

  const declared = c.attributes ?? {};
  const attrs: Record<string, AttributeValue> = {};
  for (const [k, a] of Object.entries(declared)) if (a.default !== undefined) attrs[k] = a.default;
  for (const [k, v] of Object.entries(req.attributes ?? {})) {
    if (!(k in declared)) fail(`attribute ${k}`, `not an attribute of ${c.name}${suggest(k, Object.keys(declared))}; attributes are ${list(Object.keys(declared))}`);
    attrs[k] = v;
  }
  for (const [k, con] of Object.entries(c.attributeConstraints ?? {})) {
    if (!(k in attrs)) continue;
    if (!con.values.some((v) => deepEqual(v, attrs[k]))) {
      fail(`attribute ${k}`, `value ${formatValue(attrs[k])} is not supported; allowed values: ${con.values.map((v) => formatValue(v)).join(', ')}`);
    }
  }

  const tunables: Record<string, TunableValue> = {};
  const decl = c.tunables ?? {};
  for (const [k, t] of Object.entries(decl)) tunables[k] = t.default;
  for (const [k, v] of Object.entries(req.tunables ?? {})) {
    if (!(k in decl)) fail(`tunable ${k}`, `not a tunable of ${c.name}${suggest(k, Object.keys(decl))}; tunables are ${list(Object.keys(decl)) || 'none'}`);
    if (typeof v !== typeof decl[k]!.default) fail(`tunable ${k}`, `expects a ${typeof decl[k]!.default} like its default ${formatValue(decl[k]!.default)}, got ${formatValue(v)}`);
    tunables[k] = v;
  }
  return { shapes, ranks, dtypes, typeVars, attrs, tunables };
}
