/**
 * Validate (JSON Schema, then layout consistency) and normalize a kernel registry into the in-memory model.
 * Irregular forms are normalized with a lint warning; malformed entries are errors naming operation, variant, field.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import schema from '../../spec/kernel-registry.schema.json' with { type: 'json' };
import { RegistryError, UnknownKernelError } from './errors.ts';
import { findDuplicateKeys } from './json-keys.ts';
import type { BindingSpec, KernelVariant, LintMessage, Operation, Registry, UniformField, UniformLayout } from './types.ts';

/** Every WebGPU feature name a variant may require. */
export const KNOWN_FEATURES = new Set([
  'shader-f16',
  'subgroups',
  'subgroup-size-control',
  'timestamp-query',
  'chromium-experimental-subgroup-matrix',
  'float32-filterable',
  'float32-blendable',
  'depth-clip-control',
  'depth32float-stencil8',
  'texture-compression-bc',
  'texture-compression-etc2',
  'texture-compression-astc',
  'indirect-first-instance',
  'rg11b10ufloat-renderable',
  'bgra8unorm-storage',
  'clip-distances',
  'dual-source-blending',
]);

let validator: ValidateFunction | undefined;

function schemaErrors(json: unknown): LintMessage[] {
  validator ??= new Ajv({ allErrors: true, strict: false }).compile(schema);
  if (validator(json)) return [];
  const seen = new Set<string>();
  const out: LintMessage[] = [];
  for (const e of validator.errors ?? []) {
    // oneOf on baseUniforms produces an error per branch; report the path once with the most useful message.
    const path = e.instancePath.replace(/^\/operations\//, '').split('/').join('.') || '(root)';
    const msg = `${e.message}${e.params && 'allowedValues' in e.params ? ` (${(e.params.allowedValues as unknown[]).join(', ')})` : ''}${e.params && 'additionalProperty' in e.params ? ` ("${e.params.additionalProperty}")` : ''}`;
    const key = `${path}:${msg}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ level: 'error', where: path, message: msg });
  }
  return out;
}

type RawField = { name: string; type: UniformField['type']; offset: number };
type RawUniforms = { size: number; fields: RawField[] } | Record<string, { type: UniformField['type']; offset: number }>;
type RawBinding = { index: number; name?: string; type: BindingSpec['type'] };
type RawVariant = {
  wgsl: string;
  entryPoint: string;
  workgroup: [number, number, number];
  requires?: string[];
  description?: string;
  outputDtype?: string;
  inputDtype?: string;
  weightDtype?: string;
  variantMetadata?: Record<string, unknown>;
  bindingsOverride?: RawBinding[];
  uniformsOverride?: { size: number; fields: RawField[] };
  wgslOverrides?: Record<string, number>;
  reachability?: Partial<KernelVariant['reachability']>;
};
type RawOperation = { description?: string; baseBindings: RawBinding[]; baseUniforms: RawUniforms; variants: Record<string, RawVariant> };

function normalizeUniforms(raw: RawUniforms, where: string, out: LintMessage[]): UniformLayout {
  if (Array.isArray((raw as { fields?: unknown }).fields)) return raw as UniformLayout;
  const fields = Object.entries(raw as Record<string, { type: UniformField['type']; offset: number }>).map(([name, f]) => ({
    name,
    type: f.type,
    offset: f.offset,
  }));
  const end = fields.reduce((m, f) => Math.max(m, f.offset + 4), 0);
  const size = Math.ceil(end / 16) * 16;
  out.push({
    level: 'warning',
    where: `${where}.baseUniforms`,
    message: `given as a map of field -> {type, offset} without "size"; normalized to {size: ${size}, fields: [...]} (${fields.length} fields)`,
  });
  return { size, fields };
}

function normalizeBindings(raw: RawBinding[], where: string, out: LintMessage[]): BindingSpec[] {
  const unnamed = raw.filter((b) => !b.name);
  if (unnamed.length) {
    out.push({
      level: 'warning',
      where,
      message: `bindings without names at index ${unnamed.map((b) => b.index).join(', ')}; named ${unnamed
        .map((b) => (b.index === 0 && b.type === 'uniform' ? 'uniforms' : `binding${b.index}`))
        .join(', ')}`,
    });
  }
  return raw.map((b) => ({
    index: b.index,
    type: b.type,
    name: b.name ?? (b.index === 0 && b.type === 'uniform' ? 'uniforms' : `binding${b.index}`),
  }));
}

/**
 * Layout checks. `overlapLevel` is 'warning' for an operation whose variants are all `unused` (the shipped registry
 * has one such conflict in lm_head_select_logits): it is reported, and the packer refuses to write the aliased slot.
 */
function checkUniforms(u: UniformLayout, where: string, errs: LintMessage[], overlapLevel: LintMessage['level'] = 'error'): void {
  const byName = new Set<string>();
  const sorted = [...u.fields].sort((a, b) => a.offset - b.offset);
  for (const f of u.fields) {
    if (byName.has(f.name)) errs.push({ level: 'error', where: `${where}.${f.name}`, message: 'duplicate uniform field name' });
    byName.add(f.name);
    if (f.offset + 4 > u.size) {
      errs.push({ level: 'error', where: `${where}.${f.name}`, message: `field at offset ${f.offset} (4 bytes) ends past the uniform size ${u.size}` });
    }
  }
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1]!;
    const b = sorted[i]!;
    if (b.offset < a.offset + 4) {
      errs.push({
        level: overlapLevel,
        where: `${where}.${b.name}`,
        message:
          `field at offset ${b.offset} overlaps field "${a.name}" at offset ${a.offset}` +
          (overlapLevel === 'warning' ? ' (every variant of this operation is unused; binding it would fail)' : ''),
      });
    }
  }
}

/** WebGPU's spec minimum of maxBindingsPerBindGroup: a binding index must be below it to bind on every device. */
export const MAX_BINDING_INDEX = 999;

function checkBindings(list: BindingSpec[] | RawBinding[], where: string, errs: LintMessage[], checkIndexLimit = true): void {
  const idx = new Map<number, string | undefined>();
  const names = new Set<string>();
  for (const b of list) {
    if (checkIndexLimit && b.index > MAX_BINDING_INDEX) {
      errs.push({
        level: 'error',
        where: `${where}[${b.index}]${b.name ? ` ("${b.name}")` : ''}`,
        message: `binding index ${b.index} is beyond the WebGPU limit: indices must be below maxBindingsPerBindGroup, whose guaranteed minimum is ${MAX_BINDING_INDEX + 1}; renumber the binding`,
      });
    }
    if (idx.has(b.index)) errs.push({ level: 'error', where: `${where}[${b.index}]`, message: `duplicate binding index ${b.index}` });
    idx.set(b.index, b.name);
    if (b.name) {
      if (names.has(b.name)) errs.push({ level: 'error', where: `${where}.${b.name}`, message: `duplicate binding name "${b.name}"` });
      names.add(b.name);
    }
  }
}

export interface ParseOptions {
  /** Called with each variant's WGSL file; return false when it does not exist (strict mode). */
  wgslExists?: (file: string) => boolean;
}

/**
 * Parse registry JSON text: JSON syntax, keys repeated within an object (JSON.parse would keep only the last),
 * then everything parseRegistry checks; all problems are reported together in one RegistryError.
 */
export function parseRegistryText(text: string, file: string, opts: ParseOptions = {}): Registry {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new RegistryError(file, [{ level: 'error', where: '(file)', message: `not valid JSON: ${(e as Error).message}` }]);
  }
  const dups: LintMessage[] = findDuplicateKeys(text).map((d) => ({
    level: 'error',
    where: d.path,
    message: `duplicate key "${d.key}" (JSON.parse keeps only the last value; remove or rename one)`,
  }));
  let reg: Registry | undefined;
  let problems: LintMessage[] = [];
  try {
    reg = parseRegistry(json, file, opts);
  } catch (e) {
    if (!(e instanceof RegistryError)) throw e;
    problems = e.problems;
  }
  if (dups.length || !reg) throw new RegistryError(file, [...dups, ...problems]);
  return reg;
}

export function parseRegistry(json: unknown, file: string, opts: ParseOptions = {}): Registry {
  const errors = schemaErrors(json);
  if (errors.length) throw new RegistryError(file, errors);
  const doc = json as { version: string; operations: Record<string, RawOperation> };
  const warnings: LintMessage[] = [];
  const operations = new Map<string, Operation>();
  for (const [opName, rawOp] of Object.entries(doc.operations)) {
    checkBindings(rawOp.baseBindings, `${opName}.baseBindings`, errors);
    const bindings = normalizeBindings(rawOp.baseBindings, `${opName}.baseBindings`, warnings);
    const uniforms = normalizeUniforms(rawOp.baseUniforms, opName, warnings);
    const allUnused = Object.values(rawOp.variants).every((v) => v.reachability?.status === 'unused');
    const layoutIssues: LintMessage[] = [];
    checkUniforms(uniforms, `${opName}.baseUniforms`, layoutIssues, allUnused ? 'warning' : 'error');
    for (const m of layoutIssues) (m.level === 'error' ? errors : warnings).push(m);
    const variants = new Map<string, KernelVariant>();
    for (const [vName, v] of Object.entries(rawOp.variants)) {
      const id = `${opName}.${vName}`;
      if (v.requires === undefined) {
        warnings.push({ level: 'warning', where: id, message: 'no "requires" list; treated as requiring no features ([])' });
      }
      for (const f of v.requires ?? []) {
        if (!KNOWN_FEATURES.has(f)) errors.push({ level: 'error', where: `${id}.requires`, message: `unknown feature name "${f}"` });
      }
      let vb = bindings;
      if (v.bindingsOverride) {
        checkBindings(v.bindingsOverride, `${id}.bindingsOverride`, errors);
        const merged = new Map(bindings.map((b) => [b.index, b]));
        for (const b of normalizeBindings(v.bindingsOverride, `${id}.bindingsOverride`, warnings)) merged.set(b.index, b);
        vb = [...merged.values()].sort((a, b) => a.index - b.index);
        checkBindings(vb, `${id}.bindings (base merged with bindingsOverride)`, errors, false);
      }
      const vu = v.uniformsOverride ?? uniforms;
      if (v.uniformsOverride) checkUniforms(vu, `${id}.uniformsOverride`, errors);
      if (opts.wgslExists && !opts.wgslExists(v.wgsl)) {
        errors.push({ level: 'error', where: `${id}.wgsl`, message: `WGSL file "${v.wgsl}" does not exist in src/kernels/` });
      }
      variants.set(vName, {
        id,
        operation: opName,
        name: vName,
        wgsl: v.wgsl,
        entryPoint: v.entryPoint,
        workgroup: v.workgroup,
        requires: v.requires ?? [],
        description: v.description,
        outputDtype: v.outputDtype,
        inputDtype: v.inputDtype,
        weightDtype: v.weightDtype,
        metadata: v.variantMetadata ?? {},
        bindings: vb,
        uniforms: vu,
        overrides: v.wgslOverrides ?? {},
        reachability: {
          status: v.reachability?.status ?? 'unused',
          inlineConfigs: v.reachability?.inlineConfigs ?? [],
          ruleChains: v.reachability?.ruleChains ?? [],
          wgslOnDisk: v.reachability?.wgslOnDisk ?? false,
        },
      });
    }
    operations.set(opName, { name: opName, description: rawOp.description ?? '', bindings, uniforms, variants });
  }
  if (errors.length) throw new RegistryError(file, errors);
  return {
    file,
    version: doc.version,
    operations,
    warnings,
    variant(id: string): KernelVariant {
      const dot = id.indexOf('.');
      const op = operations.get(dot < 0 ? id : id.slice(0, dot));
      if (!op) throw new UnknownKernelError(id, `no operation "${id.slice(0, dot < 0 ? undefined : dot)}" in ${file}`);
      const v = dot < 0 ? undefined : op.variants.get(id.slice(dot + 1));
      if (!v) throw new UnknownKernelError(id, `operation ${op.name} has variants: ${[...op.variants.keys()].join(', ')}`);
      return v;
    },
  };
}
