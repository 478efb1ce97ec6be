/**
 * Generic binder: compiles a registry kernel (WGSL file, entry point, overrides and explicit layout from the
 * registry) and binds buffers by the registry's binding names. Binding 0 `uniforms` is packed from named values.
 */
import { uploadBuffer, USAGE } from '../gpu/buffers.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import type { BufferBinding } from '../gpu/bindgroups.ts';
import type { Dispatch, Recorder } from '../gpu/recorder.ts';
import { KernelBindingError } from './errors.ts';
import type { KernelVariant } from './types.ts';
import { packUniforms, type UniformValues } from './uniforms.ts';
import { specializeWgsl } from './wgsl-features.ts';

/** A buffer for a binding: whole buffer, or a range. */
export type BufferArg = GPUBuffer | { buffer: GPUBuffer; offset?: number; size?: number };

/** Where WGSL source comes from (Node: files under src/kernels; browser: a bundled map). */
export type WgslSource = (file: string) => Promise<string>;

// Node default: read src/kernels/<file>. The specifier is a variable so browser bundles leave it out; a browser
// page calls setWgslSource (e.g. with fetch) before compiling kernels.
const LOAD_MODULE = './load.ts';
let wgslSource: WgslSource = async (file) => {
  const { readFile } = await import('node:fs/promises');
  const { wgslPath } = (await import(/* @vite-ignore */ LOAD_MODULE)) as typeof import('./load.ts');
  return readFile(wgslPath(file), 'utf8');
};

export function setWgslSource(src: WgslSource): void {
  wgslSource = src;
}

const sourceCache = new Map<string, Promise<string>>();
export function loadWgsl(file: string): Promise<string> {
  let p = sourceCache.get(file);
  if (!p) sourceCache.set(file, (p = wgslSource(file)));
  return p;
}

export class MissingFeatureError extends Error {
  constructor(kernel: string, missing: string[]) {
    super(`kernel ${kernel} requires ${missing.join(', ')}, which this device does not have`);
    this.name = 'MissingFeatureError';
  }
}

export function missingFeatures(dev: TesseraDevice, v: KernelVariant): string[] {
  return v.requires.filter((f) => !dev.caps.features.has(f));
}

export interface BoundKernel {
  variant: KernelVariant;
  pipeline: GPUComputePipeline;
  layout: GPUBindGroupLayout;
}

/** Compile (cached) the pipeline of a registry variant. */
export async function getKernel(dev: TesseraDevice, v: KernelVariant): Promise<BoundKernel> {
  const missing = missingFeatures(dev, v);
  if (missing.length) throw new MissingFeatureError(v.id, missing);
  const code = specializeWgsl(await loadWgsl(v.wgsl), dev.caps.features, v.wgsl);
  const { pipeline, layout } = await dev.pipelines.get({
    code,
    entryPoint: v.entryPoint,
    constants: Object.keys(v.overrides).length ? v.overrides : undefined,
    layout: v.bindings.map((b) => ({ binding: b.index, type: b.type })),
    label: v.id,
  });
  return { variant: v, pipeline, layout };
}

const bindingNames = new WeakMap<KernelVariant, Set<string>>();

/**
 * Make a bind group for `k`: every non-uniform binding must be given by name in `buffers`; `uniforms` holds the
 * values of the registry's uniform fields. With a recorder, the uniform bytes go into its per-submit arena.
 */
export function bindKernel(
  dev: TesseraDevice,
  k: BoundKernel,
  buffers: Record<string, BufferArg>,
  uniforms: UniformValues,
  rec?: Recorder,
): GPUBindGroup {
  const v = k.variant;
  let names = bindingNames.get(v);
  if (!names) bindingNames.set(v, (names = new Set(v.bindings.map((b) => b.name))));
  for (const n in buffers) {
    if (!names.has(n)) throw new KernelBindingError(v.id, `unknown binding "${n}" (bindings: ${[...names].join(', ')})`);
  }
  const entries: BufferBinding[] = [];
  for (const b of v.bindings) {
    if (b.type === 'uniform') {
      const data = packUniforms(v.id, v.uniforms, uniforms);
      if (rec) entries.push({ binding: b.index, ...rec.uniform(data) });
      else entries.push({ binding: b.index, buffer: uploadBuffer(dev.device, new Uint8Array(data), `${v.id}.${b.name}`, USAGE.UNIFORM | USAGE.COPY_DST) });
      continue;
    }
    const arg = buffers[b.name];
    if (!arg) throw new KernelBindingError(v.id, `missing buffer for binding ${b.index} "${b.name}" (${b.type})`);
    entries.push('buffer' in arg ? { binding: b.index, ...arg } : { binding: b.index, buffer: arg });
  }
  return dev.bindGroups.get(k.layout, entries, v.id);
}

/** Bind and record one dispatch of a registry kernel. */
export function recordKernel(
  rec: Recorder,
  dev: TesseraDevice,
  k: BoundKernel,
  buffers: Record<string, BufferArg>,
  uniforms: UniformValues,
  workgroups: [number, number, number],
): void {
  const bindGroup = bindKernel(dev, k, buffers, uniforms, rec);
  const d: Dispatch = { label: k.variant.id, pipeline: k.pipeline, bindGroup, workgroups };
  rec.dispatch(d);
}
