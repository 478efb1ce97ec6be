import { beforeAll, describe, expect, it } from 'vitest';
import { readBuffer, readFloat32, sizeClass, uploadBuffer } from '../src/gpu/buffers.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { testDevice } from './helpers/device.ts';
import { ShaderCompileError } from '../src/gpu/pipelines.ts';
import { Recorder } from '../src/gpu/recorder.ts';
import { capsFromJson, capsToJson } from '../src/gpu/caps.ts';
import { readFileSync } from 'node:fs';

const SCALE = /* wgsl */ `
@group(0) @binding(0) var<uniform> u: vec4<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < arrayLength(&x)) { y[g.x] = x[g.x] * u.x + u.y; }
}`;
const LAYOUT = [
  { binding: 0, type: 'uniform' as const },
  { binding: 1, type: 'read-only-storage' as const },
  { binding: 2, type: 'storage' as const },
];

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

describe('device layer', () => {
  it('exposes caps shaped like the contract `device` namespace', () => {
    expect(dev.caps.features.has('subgroups')).toBe(true);
    expect(dev.caps.limits.maxComputeWorkgroupSizeX).toBeGreaterThanOrEqual(256);
    expect(dev.caps.adapterInfo.subgroupMinSize).toBeGreaterThanOrEqual(1);
    // requested the adapter's maximum limits, not the defaults (default maxStorageBufferBindingSize is 128 MiB)
    expect(dev.caps.limits.maxStorageBufferBindingSize).toBeGreaterThan(128 << 20);
    const json = capsToJson(dev.caps);
    const back = capsFromJson(JSON.parse(JSON.stringify(json)));
    expect([...back.features].sort()).toEqual(json.features);
  });

  it('reads the shipped device profiles into caps', () => {
    const h200 = capsFromJson(JSON.parse(readFileSync('spec/device-profiles/nvidia-h200.json', 'utf8')));
    expect(h200.features.has('shader-f16')).toBe(true);
    expect(h200.adapterInfo.subgroupMatrixConfigs.some((c) => c.componentType === 'f16' && c.M === 16)).toBe(true);
    expect(() => capsFromJson({ features: 'x' } as never, 'p.json')).toThrow(/p\.json: field "features" must be an array/);
  });

  it('records many dispatches into one submit and caches pipelines', async () => {
    const before = dev.pipelines.compiled;
    const { pipeline, layout } = await dev.pipelines.get({ code: SCALE, entryPoint: 'main', layout: LAYOUT, label: 'test.scale' });
    await dev.pipelines.get({ code: SCALE, entryPoint: 'main', layout: LAYOUT, label: 'test.scale' });
    expect(dev.pipelines.compiled - before).toBe(1);
    const n = 1000;
    const x = new Float32Array(n).map((_, i) => i);
    const xb = uploadBuffer(dev.device, x, 'x');
    const yb = dev.buffers.acquire(n * 4, undefined, 'y');
    const zb = dev.buffers.acquire(n * 4, undefined, 'z');
    const rec = new Recorder(dev);
    const ub1 = uploadBuffer(dev.device, new Float32Array([2, 1, 0, 0]), 'u1', 0x40 | 0x8);
    const ub2 = uploadBuffer(dev.device, new Float32Array([-1, 0.5, 0, 0]), 'u2', 0x40 | 0x8);
    const bg = (u: GPUBuffer, a: GPUBuffer, b: GPUBuffer) =>
      dev.device.createBindGroup({ layout, entries: [{ binding: 0, resource: { buffer: u } }, { binding: 1, resource: { buffer: a, size: n * 4 } }, { binding: 2, resource: { buffer: b, size: n * 4 } }] });
    rec.dispatch({ label: 'test.scale', pipeline, bindGroup: bg(ub1, xb, yb), workgroups: [Math.ceil(n / 64), 1, 1] });
    rec.dispatch({ label: 'test.scale', pipeline, bindGroup: bg(ub2, yb, zb), workgroups: [Math.ceil(n / 64), 1, 1] });
    expect(rec.dispatchCount).toBe(2);
    const times = await rec.submit();
    const z = await readFloat32(dev.device, zb, n);
    for (let i = 0; i < n; i += 97) expect(z[i]).toBe(-(2 * i + 1) + 0.5);
    if (dev.timestamps) {
      expect(times.map((t) => t.label)).toEqual(['test.scale', 'test.scale']);
      for (const t of times) expect(t.ms).toBeGreaterThanOrEqual(0);
    }
    dev.buffers.release(yb);
    const again = dev.buffers.acquire(n * 4 - 8, undefined, 'reuse');
    expect(again).toBe(yb);
    dev.buffers.release(again);
    dev.buffers.release(zb);
  });

  it('rejects bad dispatch sizes and reports WGSL errors naming the kernel', async () => {
    const rec = new Recorder(dev);
    expect(() => rec.dispatch({ label: 'k.bad', pipeline: {} as GPUComputePipeline, bindGroup: {} as GPUBindGroup, workgroups: [70000, 1, 1] })).toThrow(
      /kernel k\.bad: dispatch size \[70000, 1, 1\]/,
    );
    await expect(dev.pipelines.get({ code: 'fn main( {', entryPoint: 'main', layout: [], label: 'broken.kernel' })).rejects.toBeInstanceOf(ShaderCompileError);
    await expect(dev.pipelines.get({ code: 'fn main( {', entryPoint: 'main', layout: [], label: 'broken.kernel' })).rejects.toThrow(/kernel broken\.kernel/);
  });

  it('reads back exact bytes and rounds pool sizes to classes', async () => {
    const data = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const b = uploadBuffer(dev.device, data, 'bytes');
    expect([...new Uint8Array(await readBuffer(dev.device, b, 12))]).toEqual([...data]);
    expect(sizeClass(1)).toBe(256);
    expect(sizeClass(70000)).toBe(81920);
    expect(sizeClass(70000)).toBeGreaterThanOrEqual(70000);
  });
});
