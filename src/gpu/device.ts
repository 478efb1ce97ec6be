/**
 * Device acquisition for Node (npm `webgpu`, Dawn) and the browser (`navigator.gpu`).
 * Requests every useful feature the adapter offers and the adapter's maximum limits, and returns a
 * TesseraDevice whose `caps` is shaped like the `device` namespace contract expressions read.
 */
import { readConfig } from '../config.ts';
import { getHost } from '../host.ts';
import type { DeviceCaps, SubgroupMatrixConfig } from './caps.ts';
import { BindGroupCache } from './bindgroups.ts';
import { BufferPool } from './buffers.ts';
import { PipelineCache } from './pipelines.ts';

/** Features Tessera's kernels can use; requested whenever the adapter offers them. */
export const USEFUL_FEATURES = [
  'shader-f16',
  'subgroups',
  'subgroup-size-control',
  'timestamp-query',
  'chromium-experimental-subgroup-matrix',
] as const;

/**
 * Dawn options with validation and robustness (bounds clamps on every storage access) on: SwiftShader and tests.
 * Timestamps are left unquantized (Dawn rounds them to ~65 us otherwise, which hides every decode kernel).
 */
export const DEFAULT_DAWN_ARGS = ['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia', 'disable-dawn-features=timestamp_quantization'];
/**
 * On hardware GPUs: Dawn's host-side validation, shader robustness and workgroup-memory zero-initialization off, as
 * ONNX Runtime and llama.cpp run Dawn (1.4-1.6x decode on the H200, shared/gpu/README.md; without the zero-fill
 * prologue every kernel's first loads go out before any barrier: a small gain, 8B Q4_K 511.8 / 513.1 vs 510.7 / 510.4
 * tok/s, GPU 1.945 / 1.948 vs 1.959 / 2.002 ms a step, bench/receipts dawn-wi-*; none at 3afcc96, with the kernels of
 * then, decode-wginit-*). An out-of-bounds kernel bug is then not caught, nor a kernel that reads workgroup memory it
 * did not write (none may: the GPU lane passes under these options too, bench/receipts gpu-lane-wi-*): the tests run
 * with the checked set (`checked: true`), and TESSERA_DAWN_CHECKED=1 turns it on anywhere.
 */
export const FAST_DAWN_ARGS = ['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia,skip_validation,disable_robustness,disable_workgroup_init', 'disable-dawn-features=timestamp_quantization'];

export class NoAdapterError extends Error {
  constructor(detail: string) {
    super(
      `No WebGPU adapter is available (${detail}).\n` +
        'How to get one:\n' +
        '  - On a Linux machine without a GPU: install Debian\'s chromium and the Vulkan loader, which ship the SwiftShader\n' +
        '    Vulkan driver: `apt-get install -y --no-install-recommends chromium libvulkan1`. Tessera finds\n' +
        '    /usr/lib/chromium/vk_swiftshader_icd.json by itself (override with TESSERA_SWIFTSHADER_ICD).\n' +
        '  - On a machine with a GPU: install its Vulkan driver (NVIDIA: the driver\'s nvidia_icd.json; point VK_DRIVER_FILES at it).\n' +
        '  - In a browser: use one with WebGPU enabled (Chrome/Edge 113+, or --enable-unsafe-webgpu).',
    );
    this.name = 'NoAdapterError';
  }
}

export interface CreateDeviceOptions {
  /** Dawn options for Node (`create([...])`); default: env TESSERA_DAWN_ARGS/WEBGPU_DAWN_ARGS, else DEFAULT_DAWN_ARGS. */
  dawnArgs?: string[];
  powerPreference?: GPUPowerPreference;
  /**
   * Keep Dawn's validation and robustness on (the default on SwiftShader and under TESSERA_DAWN_CHECKED=1; hardware
   * GPUs otherwise get FAST_DAWN_ARGS). Ignored when dawnArgs or TESSERA_DAWN_ARGS give the options.
   */
  checked?: boolean;
  /** Features to leave off even when offered (to test fallbacks). */
  disableFeatures?: string[];
  /** Record per-dispatch timestamps (when `timestamp-query` exists). Default: env TESSERA_TIMESTAMPS=1. */
  timestamps?: boolean;
}

export interface TesseraDevice {
  device: GPUDevice;
  caps: DeviceCaps;
  buffers: BufferPool;
  pipelines: PipelineCache;
  bindGroups: BindGroupCache;
  timestamps: boolean;
  /** The Dawn options the device was created with (Node). */
  dawnArgs?: string[];
  /** Messages of uncaptured WebGPU errors raised on this device, in order (each is also logged). */
  errors: string[];
  destroy(): void;
}

/**
 * Dawn instances (GPU objects) that created live adapters. Dawn's node bindings crash (use after free, seen as
 * "Owner died" / futex aborts / segfaults) when a GPU instance is garbage-collected while a device it made is
 * still alive, so every instance is kept reachable for the life of the process.
 */
const liveInstances: GPU[] = [];

async function getAdapter(opts: CreateDeviceOptions): Promise<{ adapter: GPUAdapter; dawnArgs?: string[] }> {
  const req: GPURequestAdapterOptions = { powerPreference: opts.powerPreference ?? 'high-performance' };
  if (typeof navigator !== 'undefined' && (navigator as Navigator).gpu) {
    const a = await navigator.gpu.requestAdapter(req);
    if (!a) throw new NoAdapterError('navigator.gpu.requestAdapter() returned null');
    return { adapter: a };
  }
  if (typeof process === 'undefined') throw new NoAdapterError('this environment has neither navigator.gpu nor Node.js');
  const cfg = readConfig();
  const host = await getHost('Dawn (WebGPU without navigator.gpu)');
  const { gpu, dawnArgs, retry } = await host.nodeGpu(opts.dawnArgs ?? cfg.dawnArgs, opts.checked ?? cfg.dawnChecked);
  liveInstances.push(gpu);
  let adapter = await gpu.requestAdapter(req);
  if (!adapter && retry) {
    const again = retry();
    liveInstances.push(again);
    adapter = await again.requestAdapter(req);
  }
  if (!adapter) throw new NoAdapterError(`Dawn found no Vulkan adapter (Dawn options: ${dawnArgs.join(' ') || 'none'})`);
  return { adapter, dawnArgs };
}

function limitsOf(src: GPUSupportedLimits): Record<string, number> {
  const out: Record<string, number> = {};
  // GPUSupportedLimits exposes its members as prototype getters.
  for (let o: object | null = src; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const k of Object.getOwnPropertyNames(o)) {
      const v = (src as unknown as Record<string, unknown>)[k];
      if (typeof v === 'number' && !(k in out)) out[k] = v;
    }
  }
  return out;
}

function adapterInfoOf(info: GPUAdapterInfo): DeviceCaps['adapterInfo'] {
  const i = info as GPUAdapterInfo & {
    subgroupMinSize?: number;
    subgroupMaxSize?: number;
    subgroupMatrixConfigs?: SubgroupMatrixConfig[];
  };
  return {
    vendor: i.vendor ?? '',
    architecture: i.architecture ?? '',
    device: i.device ?? '',
    description: i.description ?? '',
    ...(typeof i.subgroupMinSize === 'number' ? { subgroupMinSize: i.subgroupMinSize } : {}),
    ...(typeof i.subgroupMaxSize === 'number' ? { subgroupMaxSize: i.subgroupMaxSize } : {}),
    subgroupMatrixConfigs: Array.from((i.subgroupMatrixConfigs ?? []) as Iterable<SubgroupMatrixConfig>).map((c) => ({
      componentType: c.componentType,
      resultComponentType: c.resultComponentType,
      M: c.M,
      N: c.N,
      K: c.K,
    })),
  };
}

export async function createDevice(opts: CreateDeviceOptions = {}): Promise<TesseraDevice> {
  const { adapter, dawnArgs } = await getAdapter(opts);
  const disabled = new Set(opts.disableFeatures ?? []);
  const requiredFeatures = USEFUL_FEATURES.filter((f) => adapter.features.has(f) && !disabled.has(f)) as GPUFeatureName[];
  const adapterLimits = limitsOf(adapter.limits);
  const requiredLimits: Record<string, number> = {};
  for (const [k, v] of Object.entries(adapterLimits)) requiredLimits[k] = v;
  const device = await adapter.requestDevice({ requiredFeatures, requiredLimits, label: 'tessera' });
  const errors: string[] = [];
  device.addEventListener('uncapturederror', (ev) => {
    const msg = (ev as GPUUncapturedErrorEvent).error.message;
    errors.push(msg);
    console.error(`[tessera] WebGPU error: ${msg}`);
  });
  // Dawn reports subgroupMatrixConfigs on the adapter's info (the device's adapterInfo has none).
  const info = adapterInfoOf((device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo ?? adapter.info);
  const fromAdapter = adapterInfoOf(adapter.info);
  if (!info.subgroupMatrixConfigs.length && device.features.has('chromium-experimental-subgroup-matrix' as GPUFeatureName)) {
    info.subgroupMatrixConfigs = fromAdapter.subgroupMatrixConfigs;
  }
  const caps: DeviceCaps = {
    features: new Set([...device.features].filter((f) => !disabled.has(f))),
    limits: limitsOf(device.limits),
    adapterInfo: info,
  };
  const timestamps = (opts.timestamps ?? readConfig().timestamps) && caps.features.has('timestamp-query');
  const buffers = new BufferPool(device);
  const bindGroups = new BindGroupCache(device);
  let destroyed = false;
  return {
    device,
    caps,
    buffers,
    pipelines: new PipelineCache(device),
    bindGroups,
    timestamps,
    errors,
    ...(dawnArgs ? { dawnArgs } : {}),
    destroy() {
      if (destroyed) return;
      destroyed = true;
      bindGroups.clear();
      buffers.destroyAll();
      device.destroy();
    },
  };
}

/** One-line description of the adapter, e.g. "google swiftshader (SwiftShader driver 5.0.0)". */
export function describeAdapter(caps: DeviceCaps): string {
  const a = caps.adapterInfo;
  const name = [a.vendor, a.architecture || a.device].filter(Boolean).join(' ');
  return a.description ? `${name} (${a.description})` : name;
}
