/**
 * Streaming-read bandwidth of the device, measured with GPU timestamps: the ceiling decode speed is compared to.
 *
 * The ceiling is the fastest of a few read patterns, each timed as many dispatches back to back in one compute pass
 * (between two timestamps) after the GPU has been kept busy long enough to raise its clocks. Before 2026-12-02 it was one
 * pattern (`stride` below) timed one dispatch a submit on whatever clocks the GPU had: on the H200 that read
 * 4.00-4.08 TB/s while the f16 GEMV read its 1 GB LM head at 108% of it, so the old ceiling flattered every share
 * computed against it. `legacy` in the detail is that old figure, measured the old way in the same run.
 */
import { STORAGE_USAGE, readFloat32 } from '../src/gpu/buffers.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { Recorder } from '../src/gpu/recorder.ts';

/** A grid-stride read of all of `src` (workgroups of 256), one 16-byte load a turn; `tail` is WGSL appended to its body. */
export function readShader(tail = ''): string {
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let n = arrayLength(&src);
  let stride = nw.x * 256u;
  var acc = vec4<f32>(0.0);
  for (var i = g.x; i < n; i += stride) { acc += src[i]; }
  if (acc.x == 12345.678) { dst[g.x % 256u] = acc.y; } // keeps the loads alive without a write per element
${tail}}`;
}

/**
 * Each workgroup of 256 reads `chunks` consecutive chunks of 256 x `loads` vec4s, the `loads` loads of a chunk issued
 * before any is summed (so `loads` are in flight an invocation); the last workgroup's chunks may run past the end and
 * are clamped. Dispatch: ceil(n / (256 x loads x chunks)) workgroups, over x and y where x would pass the limit
 * (workgroup index x + y * num_workgroups.x).
 */
export function chunkShader(loads: number, chunks = 1): string {
  const ls = Array.from({ length: loads }, (_, j) => `    let v${j} = src[min(b + ${j * 256}u, n - 1u)];`).join('\n');
  const sum = Array.from({ length: loads }, (_, j) => `v${j}`).join(' + ');
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_index) li: u32, @builtin(num_workgroups) nw: vec3<u32>) {
  let n = arrayLength(&src);
  var acc = vec4<f32>(0.0);
  for (var c = 0u; c < ${chunks}u; c++) {
    let b = ((w.x + w.y * nw.x) * ${chunks}u + c) * ${256 * loads}u + li;
${ls}
    acc += ${sum};
  }
  if (acc.x == 12345.678) { dst[li] = acc.y; } // keeps the loads alive without a write per element
}`;
}

export interface ReadPattern {
  /** stride (the old kernel's grid-stride loop) or chunk-L-C (chunkShader(L, C)) */
  pattern: string;
  bytesPerSecond: number;
}

export interface ReadBandwidth {
  /** the fastest pattern's bytes per second: the ceiling */
  bytesPerSecond: number;
  bytes: number;
  patterns: ReadPattern[];
  /** the pre-2026-12-02 measure (stride, one dispatch a submit, best of 5, no heating), same run, for comparison */
  legacy: number;
}

/** Bytes per second of a full read of a `bytes`-sized buffer: the fastest pattern (see ReadBandwidth). */
export async function measureReadBandwidth(dev: TesseraDevice, bytes: number, reps = 5): Promise<number> {
  return (await measureReadBandwidthDetail(dev, bytes, reps)).bytesPerSecond;
}

export async function measureReadBandwidthDetail(dev: TesseraDevice, bytes: number, reps = 5): Promise<ReadBandwidth> {
  if (!dev.timestamps) throw new Error('bandwidth measurement needs timestamp-query (createDevice({ timestamps: true }))');
  const size = Math.floor(Math.min(bytes, dev.caps.limits.maxStorageBufferBindingSize!, dev.caps.limits.maxBufferSize!) / 16) * 16;
  const n = size / 16;
  const src = dev.device.createBuffer({ size, usage: STORAGE_USAGE, label: 'bw.src' });
  const dst = dev.device.createBuffer({ size: 1 << 20, usage: STORAGE_USAGE, label: 'bw.dst' });
  const maxGroups = dev.caps.limits.maxComputeWorkgroupsPerDimension ?? 65535;
  // groups: workgroups in all (over x and y past the per-dimension limit; the stride read is capped at x instead)
  const kernels: { pattern: string; code: string; groups: number }[] = [{ pattern: 'stride', code: readShader(), groups: Math.min(maxGroups, Math.ceil(n / 256 / 8)) }];
  for (const [loads, chunks] of [
    [4, 1],
    [8, 1],
    [16, 1],
    [8, 4],
  ] as const) {
    kernels.push({ pattern: `chunk-${loads}-${chunks}`, code: chunkShader(loads, chunks), groups: Math.ceil(n / (256 * loads * chunks)) });
  }
  const built: { pattern: string; groups: number; pipeline: GPUComputePipeline; bindGroup: GPUBindGroup }[] = [];
  for (const k of kernels) {
    const { pipeline, layout } = await dev.pipelines.get({
      code: k.code,
      entryPoint: 'main',
      layout: [
        { binding: 0, type: 'read-only-storage' },
        { binding: 1, type: 'storage' },
      ],
      label: `bench.read.${k.pattern}`,
    });
    const bindGroup = dev.device.createBindGroup({ layout, entries: [{ binding: 0, resource: { buffer: src } }, { binding: 1, resource: { buffer: dst } }] });
    built.push({ pattern: k.pattern, groups: k.groups, pipeline, bindGroup });
  }
  const dispatch = (rec: Recorder, k: (typeof built)[number]) => rec.dispatch({ label: `bench.read.${k.pattern}`, pipeline: k.pipeline, bindGroup: k.bindGroup, workgroups: [Math.min(k.groups, maxGroups), Math.ceil(k.groups / maxGroups), 1] });
  // the old measure first, on whatever clocks the GPU has (as it always was)
  let legacy = Infinity;
  for (let r = 0; r < reps + 1; r++) {
    const rec = new Recorder(dev);
    dispatch(rec, built[0]!);
    const [t] = await rec.submit();
    if (r > 0) legacy = Math.min(legacy, t!.ms);
  }
  // then each pattern: calls back to back in one pass, sized to ~20 ms, after ~100 ms of reads to raise the clocks
  const perCall = Math.max(legacy, 1e-3);
  const calls = Math.max(4, Math.min(2000, Math.ceil(20 / perCall)));
  const heat = new Recorder(dev, { timestamps: false });
  for (let i = 0; i < Math.min(4000, Math.ceil(100 / perCall)); i++) dispatch(heat, built[i % built.length]!);
  await heat.submit();
  const patterns: ReadPattern[] = [];
  for (const k of built) {
    let best = Infinity;
    for (let r = 0; r < Math.max(2, Math.min(reps, 3)); r++) {
      const rec = new Recorder(dev, { timestamps: 'span' });
      for (let i = 0; i < calls; i++) dispatch(rec, k);
      const [t] = await rec.submit();
      best = Math.min(best, t!.ms / calls);
    }
    patterns.push({ pattern: k.pattern, bytesPerSecond: size / (best / 1000) });
  }
  await readFloat32(dev.device, dst, 1);
  src.destroy();
  dst.destroy();
  return { bytesPerSecond: Math.max(...patterns.map((p) => p.bytesPerSecond)), bytes: size, patterns, legacy: size / (legacy / 1000) };
}

/** One line for a log: the ceiling, its pattern, the others and the legacy figure. */
export function describeReadBandwidth(r: ReadBandwidth): string {
  const gb = (b: number) => (b / 1e9).toFixed(0);
  const best = r.patterns.find((p) => p.bytesPerSecond === r.bytesPerSecond)!;
  return `streaming read ${gb(r.bytesPerSecond)} GB/s (${best.pattern}; ${r.patterns.map((p) => `${p.pattern} ${gb(p.bytesPerSecond)}`).join(', ')}; legacy ${gb(r.legacy)}) over ${(r.bytes / 2 ** 20).toFixed(0)} MiB`;
}
