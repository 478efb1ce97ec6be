/**
 * Running a kernel contract on a device: resolve the plan, render each template pass's `.wgsl.jinja` shader from
 * its template context (@huggingface/jinja), get pipelines from the device's PipelineCache with the explicit
 * layout the plan's bindings give (index = position in the pass's list), allocate scratch buffers, and record
 * every pass into one Recorder (one submit).
 *
 *   runContract(dev, contract, { inputs, attributes, tunables })  host arrays in, host arrays out (tests, tools)
 *   recordContract(rec, dev, plan, tensors)                       tensors already on the GPU (models): records only
 *
 * Template files are looked up by the pass's bare `shader` name in src/kernels/qmoe/, ops/, then src/kernels/ (the
 * bundled kernel files of registry/bundled.ts, or a caller-supplied `loadShader`); `{% include "name" %}` in a
 * template is replaced by that file's text, looked up the same way (expandIncludes). Rendered sources are cached by (shader, hash of the context); pipelines by the
 * PipelineCache (source hash + layout); both per plan in a WeakMap so re-recording a plan costs no hashing.
 */
import { Template } from '@huggingface/jinja';
import { readBuffer, STORAGE_USAGE, storageBuffer, uploadBuffer } from '../gpu/buffers.ts';
import type { BufferBinding } from '../gpu/bindgroups.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import { hashString, type LayoutEntry } from '../gpu/pipelines.ts';
import { Recorder, type Dispatch, type KernelTime } from '../gpu/recorder.ts';
import { getKernel, registryLookup, type BoundKernel } from '../registry/binder.ts';
import { defaultRegistry, readWgslSync } from '../registry/bundled.ts';
import type { KernelVariant, Registry } from '../registry/types.ts';
import { ContractInputError } from './errors.ts';
import { checkDynamicValue, resolveContract, uniformBytes, type Plan, type PlanBinding, type PlanPass, type ResolveOptions } from './plan.ts';
import { templateContext } from './template.ts';
import { DTYPE_BYTES, type AttributeValue, type KernelContract, type KernelLookup } from './types.ts';
import type { TunableValue } from './inputs.ts';

/** Folders of src/kernels searched for a pass's `shader` template, in order ('' = src/kernels itself). */
export const SHADER_DIRS = ['qmoe/', 'ops/', ''];

export type ShaderLoader = (name: string) => string;

export class ShaderTemplateError extends Error {
  override name = 'ShaderTemplateError';
  constructor(shader: string, detail: string) {
    super(`shader template ${shader}: ${detail}`);
  }
}

/** Reads a template by bare file name from SHADER_DIRS (the kernel files: bundled, or src/kernels on disk in Node). */
export const loadShaderFile: ShaderLoader = (name) => {
  if (name.includes('/') || name.includes('\\')) throw new ShaderTemplateError(name, 'a contract names shaders by bare file name');
  for (const dir of SHADER_DIRS) {
    const text = readWgslSync(`${dir}${name}`);
    if (text !== undefined) return text;
  }
  throw new ShaderTemplateError(name, `not found in ${SHADER_DIRS.map((d) => `src/kernels/${d}`).join(', ')}`);
};

const INCLUDE = /\{%\s*include\s+"([^"]*)"\s*%\}/g;

/**
 * A template's text with each `{% include "name" %}` replaced by that file's text (found as `load` finds a pass's
 * shader; its one final newline dropped, so a directive on a line of its own leaves the lines as they were), nested
 * includes too: WGSL helpers several templates share (@huggingface/jinja has no include of its own). Includes are
 * textual, so an included file's macros and `set`s are the includer's; the form with whitespace control (`{%-`) is
 * not one (jinja then refuses the unknown tag).
 */
export function expandIncludes(text: string, shader: string, load: ShaderLoader = loadShaderFile, stack: readonly string[] = [shader]): string {
  return text.replace(INCLUDE, (_m, name: string) => {
    if (stack.includes(name)) throw new ShaderTemplateError(shader, `include cycle: ${[...stack, name].join(' -> ')}`);
    let inc: string;
    try {
      inc = load(name);
    } catch (e) {
      throw new ShaderTemplateError(stack[stack.length - 1]!, `include "${name}": ${(e as Error).message}`);
    }
    return expandIncludes(inc.replace(/\n$/, ''), shader, load, [...stack, name]);
  });
}

const parsed = new Map<string, Template>();
const rendered = new Map<string, string>();

/** Tidies jinja output: no trailing spaces, at most one blank line in a row, one final newline. */
function tidy(src: string): string {
  return `${src
    .split('\n')
    .map((l) => l.replace(/\s+$/, ''))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()}\n`;
}

/** Renders the WGSL of a template pass (cached by shader name + context hash). */
export function renderPassShader(plan: Plan, pass: PlanPass, load: ShaderLoader = loadShaderFile): string {
  if (!pass.shader) throw new ShaderTemplateError(pass.path, 'the pass names no shader template');
  const shader = pass.shader;
  const ctx = templateContext(plan, pass);
  const key = `${shader}|${hashString(JSON.stringify(ctx))}`;
  const hit = rendered.get(key);
  if (hit !== undefined) return hit;
  const loaderKey = load === loadShaderFile ? shader : undefined;
  let tpl = loaderKey ? parsed.get(loaderKey) : undefined;
  if (!tpl) {
    const text = expandIncludes(load(shader), shader, load);
    try {
      tpl = new Template(text);
    } catch (e) {
      throw new ShaderTemplateError(shader, `does not parse: ${(e as Error).message}`);
    }
    if (loaderKey) parsed.set(loaderKey, tpl);
  }
  let out: string;
  try {
    out = tidy(tpl.render(ctx as Record<string, unknown>));
  } catch (e) {
    throw new ShaderTemplateError(shader, `failed to render for ${plan.variant} pass ${pass.path}: ${(e as Error).message}`);
  }
  if (rendered.size > 2048) rendered.clear();
  rendered.set(key, out);
  return out;
}

/** A GPU tensor (or a range of a buffer) bound by contract tensor name. */
export interface GpuTensorRef {
  buffer: GPUBuffer;
  offset?: number;
  size?: number;
}

export interface PreparedPass {
  pass: PlanPass;
  label: string;
  pipeline: GPUComputePipeline;
  layout: GPUBindGroupLayout;
}

const prepared = new WeakMap<Plan, { dev: TesseraDevice; passes: PreparedPass[] }>();
const placeholders = new WeakMap<TesseraDevice, GPUBuffer>();

function layoutOf(pass: PlanPass): LayoutEntry[] {
  return pass.bindings.map((b, i) => ({ binding: b.index ?? i, type: b.kind === 'uniform' ? 'uniform' : b.access }));
}

const kernelCache = new WeakMap<TesseraDevice, WeakMap<KernelVariant, BoundKernel>>();

/** A registry kernel's pipeline (cached per device and variant: plans re-resolved every decode step reuse it). */
async function registryKernel(dev: TesseraDevice, registry: Registry, id: string): Promise<BoundKernel> {
  let byVariant = kernelCache.get(dev);
  if (!byVariant) kernelCache.set(dev, (byVariant = new WeakMap()));
  const v = registry.variant(id);
  let k = byVariant.get(v);
  if (!k) byVariant.set(v, (k = await getKernel(dev, v)));
  return k;
}

/**
 * Compiles every pass of a plan (cached per plan and device): template passes are rendered from their
 * `.wgsl.jinja`; registry-kernel passes take the registry's WGSL, entry point and binding layout.
 */
export async function prepareContract(dev: TesseraDevice, plan: Plan, load: ShaderLoader = loadShaderFile, registry: Registry = defaultRegistry()): Promise<PreparedPass[]> {
  const hit = prepared.get(plan);
  if (hit && hit.dev === dev) return hit.passes;
  const passes: PreparedPass[] = [];
  for (const pass of plan.passes) {
    if (pass.kernel) {
      const { pipeline, layout } = await registryKernel(dev, registry, pass.kernel);
      passes.push({ pass, label: pass.kernel, pipeline, layout });
      continue;
    }
    const code = renderPassShader(plan, pass, load);
    const label = `${pass.name} [${plan.variant}]`;
    const { pipeline, layout } = await dev.pipelines.get({ code, entryPoint: 'main', layout: layoutOf(pass), label });
    passes.push({ pass, label, pipeline, layout });
  }
  prepared.set(plan, { dev, passes });
  return passes;
}

function placeholder(dev: TesseraDevice): GPUBuffer {
  let b = placeholders.get(dev);
  if (!b) {
    b = storageBuffer(dev, 16, 'tessera.absent-optional-input');
    placeholders.set(dev, b);
  }
  return b;
}

/**
 * Records every pass of `plan` into `rec`. `tensors` maps contract input and output names to GPU buffers
 * (outputs sized as plan.outputs says); absent optional inputs get a placeholder. Scratch buffers come from the
 * device's pool and go back to it after the submit.
 */
export async function recordContract(
  rec: Recorder,
  dev: TesseraDevice,
  plan: Plan,
  tensors: Readonly<Record<string, GpuTensorRef>>,
  load?: ShaderLoader,
  registry?: Registry,
  /** Values of the contract's dynamic attributes for this call (default: those the plan was resolved with). */
  dynamic?: Readonly<Record<string, unknown>>,
): Promise<void> {
  const passes = await prepareContract(dev, plan, load, registry);
  if (dynamic) {
    for (const [k, v] of Object.entries(dynamic)) {
      if (!(k in plan.dynamic)) throw new ContractInputError(plan.contract, `attribute ${k}`, `is not a dynamic attribute (dynamic: ${Object.keys(plan.dynamic).join(', ') || 'none'}); resolve a plan for its value`);
      checkDynamicValue(plan.contract, k, plan.dynamic[k]!, v);
    }
  }
  const scratch = new Map<string, GPUBuffer>();
  for (const m of plan.intermediates) scratch.set(m.id, dev.buffers.acquire(Math.max(16, m.bytes), STORAGE_USAGE, `${plan.contract}.${m.id}`));
  const dispatches = planDispatches(dev, plan, passes, { tensors, scratch, uniform: (_pass, b) => rec.uniform(uniformBytes(plan, b, dynamic)) });
  for (const d of dispatches) rec.dispatch(d);
  for (const b of scratch.values()) rec.releaseAfterSubmit(b);
}

export type UniformBinding = Extract<PlanBinding, { kind: 'uniform' }>;

/** Where a plan's buffers come from when its passes are bound. */
export interface BindTargets {
  /** GPU buffers by contract input/output name. */
  tensors: Readonly<Record<string, GpuTensorRef>>;
  /** Buffers of the plan's intermediates by id. */
  scratch: ReadonlyMap<string, GPUBuffer>;
  /** The buffer range holding a uniform binding's bytes. */
  uniform(pass: PlanPass, b: UniformBinding): { buffer: GPUBuffer; offset: number; size: number };
}

/**
 * The dispatches of a prepared plan: each pass's pipeline, its bind group (from the device's cache) and the plan's
 * workgroup counts. Absent optional inputs get a placeholder buffer.
 */
export function planDispatches(dev: TesseraDevice, plan: Plan, passes: readonly PreparedPass[], t: BindTargets): Dispatch[] {
  return passes.map(({ pass, label, pipeline, layout }) => ({ label, pipeline, bindGroup: dev.bindGroups.get(layout, passEntries(dev, plan, pass, t), label), workgroups: pass.dispatch }));
}

/** The buffer ranges one pass of a plan binds, by binding index (absent optional inputs: a placeholder). */
export function passEntries(dev: TesseraDevice, plan: Plan, pass: PlanPass, t: BindTargets): BufferBinding[] {
  return pass.bindings.map((b, i) => {
    const binding = b.index ?? i;
    if (b.kind === 'uniform') return { binding, ...t.uniform(pass, b) };
    if (b.kind === 'scratch') return { binding, buffer: t.scratch.get(b.intermediate)! };
    if (b.absent) return { binding, buffer: placeholder(dev) };
    const ref = t.tensors[b.tensor];
    if (!ref) throw new ContractInputError(plan.contract, `tensor ${b.tensor}`, `pass ${pass.path} binds "${b.name}" to it, but no GPU buffer was given for it`);
    return { binding, buffer: ref.buffer, offset: ref.offset, size: ref.size };
  });
}

/** A host tensor: float16 data is raw bits (Uint16Array). */
export interface HostTensor {
  dtype: string;
  shape: readonly number[];
  data: ArrayBufferView;
}

export interface RunContractOptions {
  inputs: Readonly<Record<string, HostTensor>>;
  attributes?: Readonly<Record<string, AttributeValue>>;
  tunables?: Readonly<Record<string, TunableValue>>;
  /** Run only this variant (ContractError when it does not apply). */
  variant?: string;
  /** Where the contract came from, for messages. */
  source?: string;
  loadShader?: ShaderLoader;
  /** Reuse a plan resolved earlier for the same shapes (skips resolution). */
  plan?: Plan;
  /**
   * The registry that registry-kernel passes (`"kernel": "op.variant"`) resolve against and compile from (default:
   * the shipped registry, defaultRegistry()).
   */
  registry?: Registry;
  /** The resolver's registry lookup (default: registryLookup of `registry`). */
  kernels?: KernelLookup;
}

export interface RunContractResult {
  /** The contract's outputs, and the inputs its passes write in place (bound read_write, e.g. rope's x). */
  outputs: Record<string, HostTensor>;
  plan: Plan;
  /** Per-dispatch GPU times when the device records timestamps. */
  times: KernelTime[];
}

const numel = (shape: readonly number[]) => shape.reduce((a, d) => a * d, 1);

/** Resolves the contract for these host inputs (checking that each array matches its shape and dtype). */
export function planFor(dev: TesseraDevice, contract: KernelContract, opts: RunContractOptions): Plan {
  const label = `${contract.domain ? `${contract.domain}.` : ''}${contract.name}${opts.source ? ` (${opts.source})` : ''}`;
  const shapes: Record<string, readonly number[]> = {};
  const dtypes: Record<string, string> = {};
  for (const [name, t] of Object.entries(opts.inputs)) {
    if (!(name in contract.inputs)) continue; // resolveContract names it
    const bytes = DTYPE_BYTES[t.dtype];
    if (bytes === undefined) throw new ContractInputError(label, `input ${name}`, `unknown dtype "${t.dtype}"`);
    const want = Math.ceil(numel(t.shape) * bytes);
    if (t.data.byteLength !== want) {
      throw new ContractInputError(label, `input ${name}`, `data has ${t.data.byteLength} bytes, but shape [${t.shape.join(', ')}] of ${t.dtype} needs ${want}`);
    }
    shapes[name] = t.shape;
    dtypes[name] = t.dtype;
  }
  for (const name of Object.keys(opts.inputs)) {
    if (!(name in contract.inputs)) shapes[name] = opts.inputs[name]!.shape; // let the resolver report it
  }
  const ro: ResolveOptions = {
    shapes,
    dtypes,
    ...(opts.attributes ? { attributes: opts.attributes } : {}),
    ...(opts.tunables ? { tunables: opts.tunables } : {}),
    ...(opts.variant ? { variant: opts.variant } : {}),
    ...(opts.source ? { source: opts.source } : {}),
    device: dev.caps,
    kernels: opts.kernels ?? registryLookup(opts.registry ?? defaultRegistry(), readWgslSync),
  };
  return resolveContract(contract, ro);
}

function hostArray(dtype: string, buf: ArrayBuffer): ArrayBufferView {
  switch (dtype) {
    case 'float32':
      return new Float32Array(buf);
    case 'float16':
    case 'bfloat16':
    case 'uint16':
      return new Uint16Array(buf);
    case 'int32':
      return new Int32Array(buf);
    case 'uint32':
      return new Uint32Array(buf);
    case 'int8':
      return new Int8Array(buf);
    default:
      return new Uint8Array(buf);
  }
}

/**
 * Host arrays in, host arrays out: resolve, upload, record every pass into one submit, read the outputs back.
 * Input and output buffers live for this call only.
 */
export async function runContract(dev: TesseraDevice, contract: KernelContract, opts: RunContractOptions): Promise<RunContractResult> {
  const plan = opts.plan ?? planFor(dev, contract, opts);
  const tensors: Record<string, GpuTensorRef> = {};
  const uploaded: GPUBuffer[] = [];
  for (const [name, t] of Object.entries(opts.inputs)) {
    const buf = uploadBuffer(dev.device, t.data, `${plan.contract}.${name}`);
    uploaded.push(buf);
    tensors[name] = { buffer: buf };
  }
  const outBufs = plan.outputs.map((o) => {
    const bytes = Math.ceil(numel(o.shape) * DTYPE_BYTES[o.dtype]!);
    const buffer = dev.buffers.acquire(Math.max(16, bytes), STORAGE_USAGE, `${plan.contract}.${o.name}`);
    tensors[o.name] = { buffer };
    return { ...o, buffer, bytes };
  });
  // Inputs a pass binds read_write are written in place: read them back too.
  const inPlace = [...new Set(plan.passes.flatMap((p) => p.bindings.filter((b) => b.kind === 'tensor' && b.role === 'input' && b.access === 'storage' && !b.absent).map((b) => (b as { tensor: string }).tensor)))];
  const rec = new Recorder(dev);
  try {
    await recordContract(rec, dev, plan, tensors, opts.loadShader, opts.registry);
    const times = await rec.submit();
    const outputs: Record<string, HostTensor> = {};
    for (const o of outBufs) {
      const data = o.bytes > 0 ? await readBuffer(dev.device, o.buffer, o.bytes) : new ArrayBuffer(0);
      outputs[o.name] = { dtype: o.dtype, shape: o.shape, data: hostArray(o.dtype, data) };
    }
    for (const name of inPlace) {
      const t = opts.inputs[name]!;
      const data = t.data.byteLength > 0 ? await readBuffer(dev.device, tensors[name]!.buffer, t.data.byteLength) : new ArrayBuffer(0);
      outputs[name] = { dtype: t.dtype, shape: t.shape, data: hostArray(t.dtype, data) };
    }
    return { outputs, plan, times };
  } finally {
    for (const b of uploaded) b.destroy();
    for (const o of outBufs) dev.buffers.release(o.buffer);
  }
}
