/**
 * Registry kernels on a device: compiling a variant's pipeline (WGSL file, entry point, overrides and explicit layout
 * from the registry) and the registry lookup the contract resolver reads. There is one way to launch a registry
 * kernel: a kernel contract's pass (src/ops/contracts) resolved to a plan and recorded by recordContract
 * (src/contracts/run.ts), which binds buffers by the registry's binding names and packs uniforms with
 * src/contracts/layout.ts.
 */
import type { KernelLookup } from '../contracts/types.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import type { KernelVariant, Registry } from './types.ts';
import { specializeWgsl } from './wgsl-features.ts';
import { wgslConstants } from './wgsl-constants.ts';
import { readWgslSync } from './bundled.ts';

/** Where WGSL source comes from (Node: files under src/kernels; browser: a bundled map). */
export type WgslSource = (file: string) => Promise<string>;

// Default: the kernel files ./bundled.ts reads (bundled sources; in Node, src/kernels on disk once src/node/host.ts is
// loaded). A page may set its own (e.g. fetch) with setWgslSource.
let wgslSource: WgslSource = async (file) => {
  const text = readWgslSync(file);
  if (text === undefined) throw new Error(`kernel source ${file} is not among the kernel files (src/kernels)`);
  return text;
};

export function setWgslSource(src: WgslSource): void {
  wgslSource = src;
  sourceCache.clear();
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

/** Compile (cached by the device's PipelineCache) the pipeline of a registry variant. */
export async function getKernel(dev: TesseraDevice, v: KernelVariant): Promise<BoundKernel> {
  const missing = missingFeatures(dev, v);
  if (missing.length) throw new MissingFeatureError(v.id, missing);
  const code = specializeWgsl(v.source ?? (await loadWgsl(v.wgsl)), dev.caps.features, v.wgsl);
  const { pipeline, layout } = await dev.pipelines.get({
    code,
    entryPoint: v.entryPoint,
    constants: Object.keys(v.overrides).length ? v.overrides : undefined,
    layout: v.bindings.map((b) => ({ binding: b.index, type: b.type })),
    label: v.id,
  });
  return { variant: v, pipeline, layout };
}

let wgslTextReader: ((file: string) => string | undefined) | undefined = readWgslSync;
/** The synchronous WGSL reader lookups use by default (the kernel files of ./bundled.ts; a page may set its own). */
export function setWgslTextReader(r: ((file: string) => string | undefined) | undefined): void {
  wgslTextReader = r;
}

/**
 * What the contract resolver needs to know of a registry kernel (`operation.variant`): undefined when unknown.
 * With `wgslText` (a synchronous reader of the kernel's WGSL file), the kernel's module-scope constants come along,
 * so contract expressions read them (`kernel.constants.KMAX`) instead of repeating them.
 */
export function registryLookup(reg: Registry, wgslText: ((file: string) => string | undefined) | undefined = wgslTextReader): KernelLookup {
  const infos = new Map<string, ReturnType<KernelLookup>>();
  return (id) => {
    if (infos.has(id)) return infos.get(id);
    let v: KernelVariant;
    try {
      v = reg.variant(id);
    } catch {
      return undefined;
    }
    const text = v.source ?? wgslText?.(v.wgsl);
    const info = { requires: v.requires, bindings: v.bindings, uniforms: v.uniforms, wgsl: v.wgsl, entryPoint: v.entryPoint, workgroup: v.workgroup, ...(text !== undefined ? { constants: wgslConstants(text) } : {}) };
    infos.set(id, info);
    return info;
  };
}
