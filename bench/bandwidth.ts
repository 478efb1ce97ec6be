/** Streaming-read bandwidth of the device, measured with GPU timestamps: the ceiling decode speed is compared to. */
import { STORAGE_USAGE, readFloat32 } from '../src/gpu/buffers.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { Recorder } from '../src/gpu/recorder.ts';

/** A grid-stride read of all of `src` (workgroups of 256); `tail` is WGSL appended to its body. */
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
const READ = readShader();

/** Bytes per second of a full read of a `bytes`-sized buffer (best of `reps` dispatches). */
export async function measureReadBandwidth(dev: TesseraDevice, bytes: number, reps = 5): Promise<number> {
  if (!dev.timestamps) throw new Error('bandwidth measurement needs timestamp-query (createDevice({ timestamps: true }))');
  const size = Math.min(bytes, dev.caps.limits.maxStorageBufferBindingSize!, dev.caps.limits.maxBufferSize!);
  const src = dev.device.createBuffer({ size, usage: STORAGE_USAGE, label: 'bw.src' });
  const dst = dev.device.createBuffer({ size: 1 << 20, usage: STORAGE_USAGE, label: 'bw.dst' });
  const { pipeline, layout } = await dev.pipelines.get({
    code: READ,
    entryPoint: 'main',
    layout: [
      { binding: 0, type: 'read-only-storage' },
      { binding: 1, type: 'storage' },
    ],
    label: 'bench.read',
  });
  const bindGroup = dev.device.createBindGroup({ layout, entries: [{ binding: 0, resource: { buffer: src } }, { binding: 1, resource: { buffer: dst } }] });
  const groups = Math.min(65535, Math.ceil(size / 16 / 256 / 8));
  let best = Infinity;
  for (let r = 0; r < reps + 1; r++) {
    const rec = new Recorder(dev);
    rec.dispatch({ label: 'bench.read', pipeline, bindGroup, workgroups: [groups, 1, 1] });
    const [t] = await rec.submit();
    if (r > 0) best = Math.min(best, t!.ms);
  }
  await readFloat32(dev.device, dst, 1);
  src.destroy();
  dst.destroy();
  return size / (best / 1000);
}
