/**
 * resolveContract: inputs + device → a plan (chosen variant, rejections, intermediates with sizes, a
 * flat list of passes with `repeat` expanded, each with resolved bindings, packed uniforms, pass-level
 * derived values and a validated dispatch size).
 */
import type { DeviceCaps } from '../gpu/caps.ts';
import { ExprError, formatValue, Scope, type ExprSource } from '../expr/index.ts';
import { ContractError, ContractInputError, ContractPlanError, type Rejection } from './errors.ts';
import { normalizeInputs, type TunableValue } from './inputs.ts';
import { compileDynamic, readsDynamic, type DynamicExpr } from './dynamic.ts';
import { PackError, packByLayout, packStruct, scalar, write, type PackedField } from './layout.ts';
import { conditionFailure, offendingNames, requirementFailure, selectionOrder } from './select.ts';
import { DTYPE_BYTES, type AttributeValue, type BindingSpec, type BufferAccess, type KernelContract, type KernelLookup, type PassSpec, type RegistryKernelInfo, type ShapeSource, type VariantSpec } from './types.ts';

export interface ResolveOptions {
  /** Shapes by contract input name (output shapes may be given too; they are checked). */
  shapes: Readonly<Record<string, readonly number[]>>;
  /** Dtypes by input name; default: the type constraint's only type (or the type variable's binding). */
  dtypes?: Readonly<Record<string, string>>;
  attributes?: Readonly<Record<string, AttributeValue>>;
  tunables?: Readonly<Record<string, TunableValue>>;
  device: DeviceCaps;
  /** Registry lookup for passes that name a registry kernel (`operation.variant`). */
  kernels?: KernelLookup;
  /** Where the contract came from (a file name), for messages. */
  source?: string;
  /**
   * Consider only this variant (tests and benchmarks that run every variant the device supports). When its
   * `requires` or `when` fail, the ContractError gives the reason as usual.
   */
  variant?: string;
}

export type PlanBinding =
  | {
      kind: 'tensor';
      key: string;
      name: string;
      tensor: string;
      role: 'input' | 'output';
      access: BufferAccess;
      elementType?: string;
      index?: number;
      /** The tensor is an optional input left out of this request: bind a placeholder buffer (it is not read). */
      absent?: true;
    }
  | { kind: 'scratch'; key: string; name: string; intermediate: string; access: BufferAccess; elementType?: string; index?: number }
  | {
      kind: 'uniform';
      key: string;
      name: string;
      fields: PackedField[];
      values: Record<string, number>;
      size: number;
      /** The packed struct for the dynamic values the plan was resolved with. */
      data: ArrayBuffer;
      index?: number;
      /** Fields that read dynamic attributes: re-evaluated (expr.eval) and re-written for every call. */
      dynamic?: DynamicField[];
    };

/** A uniform field whose value depends on dynamic attributes. */
export interface DynamicField {
  name: string;
  type: PackedField['type'];
  offset: number;
  expr: DynamicExpr;
}

export interface PlanPass {
  /** The contract's pass id. */
  id: string;
  /** Unique within the plan: `token_chunks[0].fc1_activation_stage`. */
  path: string;
  name: string;
  shader?: string;
  kernel?: string;
  /** For registry-kernel passes: the kernel's WGSL file (from the registry). */
  wgsl?: string;
  /** Bound repeat indices, e.g. { chunk: 0 }. */
  repeat: Record<string, number>;
  bindings: PlanBinding[];
  /** Derived values declared on the pass (and enclosing repeat groups). */
  derived: Record<string, unknown>;
  dispatch: [number, number, number];
}

export interface PlanIntermediate {
  id: string;
  dtype: string;
  shape: number[];
  bytes: number;
}

export interface Plan {
  contract: string;
  /**
   * Dynamic attributes (they change per call and reach uniform fields only) with their static bounds. A plan
   * serves every value within the bounds: only the uniform fields listed in each binding's `dynamic` change.
   */
  dynamic: Record<string, { min?: number; max?: number }>;
  device: string;
  variant: string;
  priority: number;
  rejected: Rejection[];
  attrs: Record<string, AttributeValue>;
  tunables: Record<string, TunableValue>;
  shapes: Record<string, readonly number[]>;
  ranks: Record<string, number>;
  dtypes: Record<string, string>;
  outputs: { name: string; dtype: string; shape: number[] }[];
  intermediates: PlanIntermediate[];
  passes: PlanPass[];
  /** Contract-level and variant-level derived values that evaluate for these inputs. */
  derived: Record<string, unknown>;
  /** Derived names that failed to evaluate (not used by the chosen variant's plan), with the error. */
  deriveErrors: Record<string, string>;
}

export const deviceLabel = (d: DeviceCaps) => `${d.adapterInfo.device || d.adapterInfo.description || 'unknown'} (${d.adapterInfo.vendor || 'unknown vendor'})`;

function evalShape(scope: Scope, src: ShapeSource, ctx: string, fail: (msg: string) => never): number[] {
  const v = typeof src === 'string' ? scope.eval(src, ctx) : src.map((d, i) => scope.eval(d, `${ctx}[${i}]`));
  if (!Array.isArray(v) || !v.every((d) => Number.isInteger(d) && d >= 0)) fail(`must be a list of non-negative integers, got ${formatValue(v)}`);
  return v as number[];
}

/** Resolves a validated contract for concrete inputs on a device. */
export function resolveContract(contract: KernelContract, opts: ResolveOptions): Plan {
  const label = `${contract.domain ? `${contract.domain}.` : ''}${contract.name}${opts.source ? ` (${opts.source})` : ''}`;
  const device = deviceLabel(opts.device);
  const n = normalizeInputs(contract, label, opts);
  const tensorDtypes = n.dtypes;
  const base = { attrs: n.attrs, tunables: n.tunables, tensorDtypes, device: opts.device };

  // Output shapes: evaluated against input shapes (a throwaway scope, so no memo sees partial shapes).
  const kernels = kernelsValue(contract, opts.kernels);
  const pre = new Scope({ values: { ...base, shapes: n.shapes, ranks: n.ranks, kernels }, derive: contract.derive });
  const shapes: Record<string, readonly number[]> = { ...n.shapes };
  const ranks: Record<string, number> = { ...n.ranks };
  const outputs: Plan['outputs'] = [];
  for (const [name, out] of Object.entries(contract.outputs)) {
    let shape: number[];
    try {
      shape = evalShape(pre, out.shape, `outputs.${name}.shape`, (m) => {
        throw new ContractInputError(label, `output ${name}`, `shape ${m}`);
      });
    } catch (e) {
      if (e instanceof ExprError) throw new ContractInputError(label, `output ${name}`, `shape could not be computed: ${e.message}`);
      throw e;
    }
    const given = opts.shapes[name];
    if (given && formatValue(given) !== formatValue(shape)) {
      throw new ContractInputError(label, `output ${name}`, `shape ${formatValue(given)} given, but the contract computes ${formatValue(shape)}`);
    }
    shapes[name] = shape;
    ranks[name] = shape.length;
    outputs.push({ name, dtype: n.dtypes[name]!, shape });
  }
  const root = new Scope({ values: { ...base, shapes, ranks, kernels }, derive: contract.derive });

  // Dynamic attributes: static bounds, checked for the values given here (the program layer checks every call).
  const dyn = dynamicNames(contract);
  const dynamic: Plan['dynamic'] = {};
  for (const name of dyn) {
    const spec = contract.attributes![name]!.dynamic;
    const b: { min?: number; max?: number } = {};
    if (typeof spec === 'object') {
      for (const k of ['min', 'max'] as const) {
        if (spec[k] === undefined) continue;
        let val: unknown;
        try {
          val = root.eval(spec[k], `attributes.${name}.dynamic.${k}`);
        } catch (e) {
          if (e instanceof ExprError) throw new ContractInputError(label, `attribute ${name}`, `its ${k} bound could not be computed: ${e.message}`);
          throw e;
        }
        if (typeof val !== 'number') throw new ContractInputError(label, `attribute ${name}`, `its ${k} bound "${String(spec[k])}" must be a number, got ${formatValue(val)}`);
        b[k] = val;
      }
    }
    dynamic[name] = b;
    checkDynamicValue(label, name, b, n.attrs[name]);
  }

  // Selection. Rejection reasons are explained only when asked for (an error, `tessera contract plan`).
  const rejected: { variant: string; priority: number; why: () => Omit<Rejection, 'variant' | 'priority'> }[] = [];
  let chosen: { v: VariantSpec; scope: Scope } | undefined;
  if (opts.variant !== undefined && !contract.variants.some((v) => v.id === opts.variant)) {
    throw new ContractInputError(label, `variant "${opts.variant}"`, `not a variant of ${contract.name}; variants: ${contract.variants.map((v) => v.id).join(', ')}`);
  }
  for (const v of selectionOrder(contract.variants)) {
    if (opts.variant !== undefined && v.id !== opts.variant) continue;
    const scope = root.child({ derive: v.derive, label: `variants.${v.id}.derive` });
    const req = requirementFailure(v, opts.device, opts.kernels);
    if (req) {
      rejected.push({ variant: v.id, priority: v.priority, why: () => req });
      continue;
    }
    const held = conditionsHold(v, scope);
    if (held !== true) {
      rejected.push({ variant: v.id, priority: v.priority, why: () => conditionFailure(v, scope) ?? { kind: 'error', reason: 'a condition failed', refs: [] } });
      // A condition that cannot be evaluated (division by zero, a missing axis) is an error in the request or the
      // contract: selection stops here instead of falling silently to a lower-priority variant.
      if (held === 'error') break;
      continue;
    }
    chosen = { v, scope };
    break;
  }
  const explained = () => rejected.map((r) => ({ variant: r.variant, priority: r.priority, ...r.why() }));
  if (!chosen) {
    const all = explained();
    throw new ContractError(label, device, all, offendingNames(all));
  }
  const { v, scope } = chosen;
  const planFail = (where: string, detail: string): never => {
    throw new ContractPlanError(label, v.id, where, detail);
  };
  const evalOrFail = (s: Scope, src: ExprSource, ctx: string, where: string): unknown => {
    try {
      return s.eval(src, ctx);
    } catch (e) {
      if (e instanceof ExprError) planFail(where, e.message);
      throw e;
    }
  };

  // Intermediates.
  const limits = opts.device.limits;
  const intermediates: PlanIntermediate[] = (v.intermediates ?? []).map((m) => {
    const where = `intermediate ${m.id}`;
    let shape: number[] = [];
    try {
      shape = evalShape(scope, m.shape, `variants.${v.id}.intermediates.${m.id}.shape`, (msg) => planFail(where, `shape ${msg}`));
    } catch (e) {
      if (e instanceof ExprError) planFail(where, e.message);
      throw e;
    }
    const bytes = Math.ceil(shape.reduce((p, d) => p * d, 1) * DTYPE_BYTES[m.dtype]!);
    for (const lim of ['maxBufferSize', 'maxStorageBufferBindingSize']) {
      if (limits[lim] !== undefined && bytes > limits[lim]!) planFail(where, `${bytes} bytes exceed device.limits.${lim} = ${limits[lim]}`);
    }
    return { id: m.id, dtype: m.dtype, shape, bytes };
  });

  // Passes.
  const passes: PlanPass[] = [];
  const ctx: Ctx = { contract, v, dyn, attrs: n.attrs, opts, planFail, evalOrFail };
  expandPasses(ctx, v.passes, scope, '', {}, [], passes);

  // Template context values (names that read dynamic attributes are left out: a shader must not bake them in).
  const derived: Record<string, unknown> = {};
  const deriveErrors: Record<string, string> = {};
  for (const name of [...root.ownDerivedNames(), ...scope.ownDerivedNames()]) {
    if (readsDynamic(name, scope, dyn)) continue;
    try {
      derived[name] = scope.lookup(name);
    } catch (e) {
      if (!(e instanceof ExprError)) throw e;
      delete derived[name];
      deriveErrors[name] = e.summary;
    }
  }
  const plan: Omit<Plan, 'rejected'> = {
    contract: label,
    dynamic,
    device,
    variant: v.id,
    priority: v.priority,
    attrs: n.attrs,
    tunables: n.tunables,
    shapes,
    ranks,
    dtypes: n.dtypes,
    outputs,
    intermediates,
    passes,
    derived,
    deriveErrors,
  };
  let memo: Rejection[] | undefined;
  Object.defineProperty(plan, 'rejected', { enumerable: true, get: () => (memo ??= explained()) });
  return plan as Plan;
}

/**
 * Writes the dynamic fields of a uniform binding for `values` into `view` at `base` (the struct's first byte).
 * Values are checked against the field's scalar type; errors name the contract, field and expression.
 */
export function writeDynamicFields(plan: Plan, b: Extract<PlanBinding, { kind: 'uniform' }>, values: Readonly<Record<string, unknown>>, view: DataView, base = 0): void {
  for (const f of b.dynamic ?? []) {
    let v: unknown;
    try {
      v = f.expr.eval(values);
      write(view, { name: f.name, type: f.type, offset: base + f.offset, value: scalar(f.name, f.type, v) });
    } catch (e) {
      if (e instanceof ExprError || e instanceof PackError) {
        throw new ContractPlanError(plan.contract, plan.variant, `uniform ${b.name}.${f.name} "${f.expr.source}"`, `${e.message} (dynamic values ${formatValue(values)})`);
      }
      throw e;
    }
  }
}

/** A uniform binding's bytes for these dynamic values (the resolved bytes when none are given). */
export function uniformBytes(plan: Plan, b: Extract<PlanBinding, { kind: 'uniform' }>, values?: Readonly<Record<string, unknown>>): ArrayBuffer {
  if (!values || !b.dynamic) return b.data;
  const data = b.data.slice(0);
  writeDynamicFields(plan, b, values, new DataView(data));
  return data;
}

/** What a contract expression sees of a registry kernel: `kernel.workgroup[0]`, `kernel.constants.KMAX`. */
function kernelValue(info: RegistryKernelInfo | undefined): Record<string, unknown> {
  return { workgroup: [...(info?.workgroup ?? [])], constants: { ...(info?.constants ?? {}) } };
}

const kernelsCache = new WeakMap<KernelContract, WeakMap<KernelLookup, Record<string, unknown>>>();
/** `kernels["op.variant"]`: every registry kernel the contract's passes name (for root-level expressions). */
function kernelsValue(c: KernelContract, lookup: KernelLookup | undefined): Record<string, unknown> {
  if (!lookup) return {};
  let m = kernelsCache.get(c);
  if (!m) kernelsCache.set(c, (m = new WeakMap()));
  let v = m.get(lookup);
  if (!v) {
    v = {};
    const walk = (ps: readonly PassSpec[]) => {
      for (const p of ps) {
        if (p.kernel && !(p.kernel in v!)) {
          const info = lookup(p.kernel);
          if (info) v![p.kernel] = kernelValue(info);
        }
        if (p.passes) walk(p.passes);
      }
    };
    for (const variant of c.variants) walk(variant.passes);
    m.set(lookup, v);
  }
  return v;
}

const dynamicCache = new WeakMap<KernelContract, ReadonlySet<string>>();
/** The contract's dynamic attribute names. */
export function dynamicNames(c: KernelContract): ReadonlySet<string> {
  let d = dynamicCache.get(c);
  if (!d) dynamicCache.set(c, (d = new Set(Object.entries(c.attributes ?? {}).filter(([, a]) => a.dynamic).map(([k]) => k))));
  return d;
}

/** Checks one dynamic value against its bounds (ContractInputError naming the attribute). */
export function checkDynamicValue(contract: string, name: string, b: { min?: number; max?: number }, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new ContractInputError(contract, `attribute ${name}`, `a dynamic attribute must be a finite number, got ${formatValue(value)}`);
  if ((b.min !== undefined && value < b.min) || (b.max !== undefined && value > b.max)) {
    throw new ContractInputError(contract, `attribute ${name}`, `value ${value} is outside [${b.min ?? '-inf'}, ${b.max ?? 'inf'}] for these shapes`);
  }
}

/** Whether every `when` of the variant holds (no explanation is built); 'error' when one cannot be evaluated. */
function conditionsHold(v: VariantSpec, scope: Scope): boolean | 'error' {
  for (const [i, w] of (v.when ?? []).entries()) {
    let value: unknown;
    try {
      value = scope.eval(w, `variants.${v.id}.when[${i}]`);
    } catch (e) {
      if (e instanceof ExprError) return 'error';
      throw e;
    }
    if (value === false) return false;
    if (value !== true) return 'error'; // a non-boolean condition
  }
  return true;
}

interface Ctx {
  contract: KernelContract;
  v: VariantSpec;
  dyn: ReadonlySet<string>;
  attrs: Record<string, AttributeValue>;
  opts: ResolveOptions;
  planFail: (where: string, detail: string) => never;
  evalOrFail: (s: Scope, src: ExprSource, ctx: string, where: string) => unknown;
}

function expandPasses(c: Ctx, specs: readonly PassSpec[], parent: Scope, prefix: string, repeat: Record<string, number>, derives: Scope[], out: PlanPass[]): void {
  for (const p of specs) {
    const path = `${prefix}${p.id}`;
    if (p.repeat) {
      const count = c.evalOrFail(parent, p.repeat.count, `pass ${path}.repeat.count`, `pass ${path} repeat.count`);
      if (!Number.isInteger(count) || (count as number) < 0 || (count as number) > 100_000) {
        c.planFail(`pass ${path} repeat.count "${String(p.repeat.count)}"`, `evaluates to ${formatValue(count)}; must be an integer in [0, 100000]`);
      }
      for (let i = 0; i < (count as number); i++) {
        const r = { ...repeat, [p.repeat.index]: i };
        const s = parent.child({ values: { repeat: r }, derive: p.derive, label: `pass ${path}[${i}].derive` });
        expandPasses(c, p.passes ?? [], s, `${path}[${i}].`, r, p.derive ? [...derives, s] : derives, out);
      }
      continue;
    }
    const s = parent.child({ values: { repeat, ...(p.kernel ? { kernel: kernelValue(c.opts.kernels?.(p.kernel)) } : {}) }, derive: p.derive, label: `pass ${path}.derive` });
    const chain = p.derive ? [...derives, s] : derives;
    const derived: Record<string, unknown> = {};
    for (const d of chain) for (const name of d.ownDerivedNames()) derived[name] = c.evalOrFail(s, name, `pass ${path}.derive.${name}`, `pass ${path} derive.${name}`);
    const bindings = p.kernel ? kernelBindings(c, p, s, path) : shaderBindings(c, p, s, path);
    const max = c.opts.device.limits.maxComputeWorkgroupsPerDimension ?? 65535; // WebGPU's guaranteed minimum, for profiles without the limit
    const dispatch = (['x', 'y', 'z'] as const).map((axis) => {
      const src = p.dispatch?.[axis] ?? 1;
      const where = `pass ${path} dispatch.${axis} "${String(src)}"`;
      const val = c.evalOrFail(s, src, `pass ${path}.dispatch.${axis}`, where);
      if (typeof val !== 'number' || !Number.isInteger(val) || val < 1 || val > max) {
        c.planFail(where, `evaluates to ${formatValue(val)}; a dispatch size must be a positive integer <= ${max} (device.limits.maxComputeWorkgroupsPerDimension)`);
      }
      return val as number;
    }) as [number, number, number];
    out.push({ id: p.id, path, name: p.name ?? p.id, ...(p.shader ? { shader: p.shader } : {}), ...(p.kernel ? { kernel: p.kernel } : {}), ...(p.kernel && c.opts.kernels?.(p.kernel)?.wgsl ? { wgsl: c.opts.kernels(p.kernel)!.wgsl! } : {}), repeat, bindings, derived, dispatch });
  }
}

function packUniform(c: Ctx, s: Scope, path: string, key: string, name: string, fields: readonly { name: string; type: string; value: ExprSource }[], layout?: Parameters<typeof packByLayout>[0]): PlanBinding {
  const values: Record<string, unknown> = {};
  for (const f of fields) values[f.name] = c.evalOrFail(s, f.value, `pass ${path}.${name}.${f.name}`, `pass ${path} uniform ${name}.${f.name} "${String(f.value)}"`);
  try {
    const packed = layout ? packByLayout(layout, values) : packStruct(fields.map((f) => ({ ...f, value: values[f.name] })));
    const dynamic: DynamicField[] = [];
    for (const f of fields) {
      const expr = compileDynamic(f.value, s, c.dyn, c.attrs);
      const pf = expr && packed.fields.find((x) => x.name === f.name);
      if (pf) dynamic.push({ name: f.name, type: pf.type, offset: pf.offset, expr });
    }
    return {
      kind: 'uniform',
      key,
      name,
      fields: packed.fields,
      values: Object.fromEntries(packed.fields.map((f) => [f.name, f.value])),
      size: packed.size,
      data: packed.data,
      ...(dynamic.length ? { dynamic } : {}),
    };
  } catch (e) {
    if (e instanceof PackError) c.planFail(`pass ${path} uniform ${name}.${e.field}`, e.message);
    throw e;
  }
}

function bindSpec(c: Ctx, s: Scope, path: string, key: string, spec: BindingSpec, access?: BufferAccess): PlanBinding {
  const name = spec.name ?? key;
  const et = spec.elementType ? { elementType: spec.elementType } : {};
  if (spec.struct) return packUniform(c, s, path, key, name, spec.struct);
  if (spec.arg !== undefined) {
    const role = spec.arg in c.contract.inputs ? 'input' : 'output';
    const absent = role === 'input' && c.contract.inputs[spec.arg]!.optional && c.opts.shapes[spec.arg] === undefined ? { absent: true as const } : {};
    return { kind: 'tensor', key, name, tensor: spec.arg, role, access: access ?? spec.buffer ?? (role === 'input' ? 'read-only-storage' : 'storage'), ...et, ...absent };
  }
  return { kind: 'scratch', key, name, intermediate: spec.scratch!, access: access ?? spec.buffer ?? 'storage', ...et };
}

/** Template-shader passes: binding index = position in the pass's `bindings` list (group 0). */
function shaderBindings(c: Ctx, p: PassSpec, s: Scope, path: string): PlanBinding[] {
  return (p.bindings ?? []).map((b, i) => {
    if (typeof b !== 'string') return { ...bindSpec(c, s, path, b.name ?? `binding${i}`, b), index: i };
    const spec = c.contract.bindings?.[b];
    if (!spec) return c.planFail(`pass ${path} bindings[${i}]`, `unknown binding "${b}"`);
    return { ...bindSpec(c, s, path, b, spec), index: i };
  });
}

function kernelBindings(c: Ctx, p: PassSpec, s: Scope, path: string): PlanBinding[] {
  const k = p.kernel!;
  if (!c.opts.kernels) c.planFail(`pass ${path}`, `names registry kernel "${k}"; pass a registry lookup as options.kernels to resolve it`);
  const info = c.opts.kernels!(k);
  if (!info) return c.planFail(`pass ${path}`, `registry kernel "${k}" does not exist`);
  const buffers = p.buffers ?? {};
  const slots = new Set(info.bindings.map((b) => b.name));
  for (const slot of Object.keys(buffers)) {
    if (!slots.has(slot)) c.planFail(`pass ${path} buffers.${slot}`, `kernel ${k} has no binding "${slot}"; its bindings: ${[...slots].join(', ')}`);
  }
  return [...info.bindings]
    .sort((a, b) => a.index - b.index)
    .map((rb) => {
      if (rb.type === 'uniform') {
        if (!info.uniforms) return c.planFail(`pass ${path}`, `kernel ${k} binding ${rb.name} is a uniform but the registry gives no uniform layout`);
        const fields = Object.entries(p.uniforms ?? {}).map(([name, value]) => ({ name, type: info.uniforms!.fields.find((f) => f.name === name)?.type ?? 'u32', value }));
        return { ...packUniform(c, s, path, rb.name, rb.name, fields, info.uniforms), index: rb.index };
      }
      const target = buffers[rb.name];
      if (target === undefined) return c.planFail(`pass ${path} buffers`, `kernel ${k} binding "${rb.name}" (index ${rb.index}) has no buffer; add "${rb.name}": <binding, tensor or intermediate>`);
      const access: BufferAccess = rb.type === 'read-only-storage' ? 'read-only-storage' : 'storage';
      const spec: BindingSpec = c.contract.bindings?.[target] ?? (target in c.contract.inputs || target in c.contract.outputs ? { arg: target } : { scratch: target });
      if (spec.scratch !== undefined && !(c.v.intermediates ?? []).some((m) => m.id === spec.scratch)) {
        c.planFail(`pass ${path} buffers.${rb.name}`, `"${target}" is not a binding, tensor or intermediate of variant ${c.v.id}`);
      }
      return { ...bindSpec(c, s, path, rb.name, { ...spec, name: rb.name }, access), index: rb.index };
    });
}
