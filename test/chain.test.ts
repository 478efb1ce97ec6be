/**
 * src/program/chain.ts: kernels linked into one dispatch give what the same kernels give as dependent dispatches.
 */
import { describe, expect, it } from 'vitest';
import { chainsCanWait, linkChain, ChainLinkError, type LinkedChain } from '../src/program/chain.ts';
import { readBuffer, STORAGE_USAGE, USAGE } from '../src/gpu/buffers.ts';
import { testDevice } from './helpers/device.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';

// part 0: mid[i] = 2 src[i] + params.add (one value a lane). Its names (params, Params, twice, main's parameters)
// are the same as part 1's on purpose: the linker keeps them apart.
const PRODUCER = /* wgsl */ `
struct Params {
  add: f32,
  n: u32,
}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> mid: array<f32>;
fn twice(x: f32) -> f32 { return 2.0 * x; }
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = (wid.x + wid.y * nwg.x) * 64u + li;
  if (i < params.n) { mid[i] = twice(src[i]) + params.add; }
}`;
// part 1: dst[i] = i + the sum of all of mid (every workgroup reads every value part 0 wrote), with a workgroup
// variable and a barrier; the loads that do not need part 0 come before the marker
const CONSUMER = /* wgsl */ `
struct Params {
  n: u32,
  scale: f32,
}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> mid: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
@group(0) @binding(3) var<storage, read> twice: array<f32>;
var<workgroup> part: array<f32, 64>;
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let early = twice[li];
  // chain: inputs
  var s = 0.0;
  for (var j = li; j < params.n; j += 64u) { s += mid[j]; }
  part[li] = s;
  workgroupBarrier();
  if (li == 0u) {
    var t = 0.0;
    for (var j = 0u; j < 64u; j++) { t += part[j]; }
    dst[wid.x] = params.scale * t + f32(wid.x) + early;
  }
}`;

function buf(dev: TesseraDevice, data: Float32Array<ArrayBuffer> | Uint32Array<ArrayBuffer>, usage = STORAGE_USAGE) {
  const b = dev.device.createBuffer({ size: Math.max(16, data.byteLength), usage: usage | USAGE.COPY_DST });
  dev.device.queue.writeBuffer(b, 0, data);
  return b;
}

/** Runs a linked module twice in one pass on `buffers` (its bindings in order), with no validation error. */
async function runTwice(dev: TesseraDevice, linked: LinkedChain, buffers: GPUBuffer[]): Promise<void> {
  const d = dev.device;
  const bgl = d.createBindGroupLayout({ entries: linked.bindings.map((b) => ({ binding: b.binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: b.type } })) });
  d.pushErrorScope('validation');
  const pipeline = await d.createComputePipelineAsync({ layout: d.createPipelineLayout({ bindGroupLayouts: [bgl] }), compute: { module: d.createShaderModule({ code: linked.code }), entryPoint: 'main' } });
  const enc = d.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, d.createBindGroup({ layout: bgl, entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })) }));
  pass.dispatchWorkgroups(...linked.workgroups);
  pass.dispatchWorkgroups(...linked.workgroups);
  pass.end();
  d.queue.submit([enc.finish()]);
  expect((await d.popErrorScope())?.message).toBeUndefined();
}

describe('linked chains (src/program/chain.ts)', () => {
  it.each([false, true])('two kernels with clashing names linked into one dispatch give the dependent dispatches\' outputs; with waits (where the device allows), in one dispatch, three times in a pass; the counters are back at 0 (the consumer a tail part: %s)', async (tail) => {
    const dev = await testDevice();
    const d = dev.device;
    const n = 1000;
    const src = buf(dev, Float32Array.from({ length: n }, (_, i) => Math.sin(i)));
    const twice = buf(dev, new Float32Array(64).fill(0.5));
    const mid = buf(dev, new Float32Array(n));
    const u0 = buf(dev, new Float32Array([0.25, new Float32Array(new Uint32Array([n]).buffer)[0]!]), USAGE.UNIFORM);
    const u1 = buf(dev, new Uint32Array([n, new Uint32Array(new Float32Array([0.5]).buffer)[0]!]), USAGE.UNIFORM);
    const consumerGroups = 5;
    const linked = linkChain([
      { code: PRODUCER, workgroups: [Math.ceil(n / 64), 1, 1], label: 'producer' },
      { code: CONSUMER, workgroups: [consumerGroups, 1, 1], label: 'consumer', tail },
    ]);
    expect(linked.bindings.map((b) => [b.binding, b.type, b.from])).toEqual([
      [0, 'uniform', { part: 0, index: 0 }],
      [1, 'read-only-storage', { part: 0, index: 1 }],
      [2, 'storage', { part: 0, index: 2 }],
      [3, 'uniform', { part: 1, index: 0 }],
      [4, 'read-only-storage', { part: 1, index: 1 }],
      [5, 'storage', { part: 1, index: 2 }],
      [6, 'read-only-storage', { part: 1, index: 3 }],
      [7, 'storage', 'sync'],
    ]);
    // a tail consumer runs in the producer's last 5 workgroups to finish: no workgroups of its own
    expect(linked.phases).toEqual([
      { first: 0, groups: 16 },
      { first: tail ? 0 : 16, groups: consumerGroups },
    ]);
    expect(linked.workgroups).toEqual([tail ? 16 : 16 + consumerGroups, 1, 1]);
    const layout = (types: GPUBufferBindingType[]) => d.createBindGroupLayout({ entries: types.map((type, binding) => ({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type } })) });
    const run = async (code: string, types: GPUBufferBindingType[], groups: [number, number, number][], resources: GPUBuffer[][]) => {
      d.pushErrorScope('validation');
      const bgl = layout(types);
      const pipeline = await d.createComputePipelineAsync({ layout: d.createPipelineLayout({ bindGroupLayouts: [bgl] }), compute: { module: d.createShaderModule({ code }), entryPoint: 'main' } });
      const enc = d.createCommandEncoder();
      const pass = enc.beginComputePass();
      pass.setPipeline(pipeline);
      for (const [i, g] of groups.entries()) {
        pass.setBindGroup(0, d.createBindGroup({ layout: bgl, entries: resources[i]!.map((buffer, binding) => ({ binding, resource: { buffer } })) }));
        pass.dispatchWorkgroups(...g);
      }
      pass.end();
      d.queue.submit([enc.finish()]);
      const err = await d.popErrorScope();
      expect(err?.message).toBeUndefined();
    };
    // the reference: two dependent dispatches
    const dstRef = buf(dev, new Float32Array(consumerGroups));
    await run(PRODUCER, ['uniform', 'read-only-storage', 'storage'], [[16, 1, 1]], [[u0, src, mid]]);
    await run(CONSUMER, ['uniform', 'read-only-storage', 'storage', 'read-only-storage'], [[consumerGroups, 1, 1]], [[u1, mid, dstRef, twice]]);
    const want = new Float32Array(await readBuffer(dev.device, dstRef));
    // the CPU's value, so the reference itself is checked
    const sum = Array.from({ length: n }, (_, i) => 2 * Math.fround(Math.sin(i)) + 0.25).reduce((a, b) => a + b, 0);
    for (let w = 0; w < consumerGroups; w++) expect(want[w]).toBeCloseTo(0.5 * sum + w + 0.5, 2);
    // linked: mid cleared first, so a consumer that read before the producer wrote would see zeros
    const mid2 = buf(dev, new Float32Array(n));
    const dst = buf(dev, new Float32Array(consumerGroups));
    const sync = buf(dev, new Uint32Array(2));
    // mid is written by part 0 and read by part 1: the linked module binds it once, read_write
    const link = (waits: boolean) =>
      linkChain(
        [
          { code: PRODUCER, workgroups: [Math.ceil(n / 64), 1, 1], label: 'producer', resources: ['u0', 'src', 'mid'] },
          { code: CONSUMER, workgroups: [consumerGroups, 1, 1], label: 'consumer', resources: ['u1', 'mid', 'dst', 'twice'], tail },
        ],
        65535,
        { waits },
      );
    const linkedW = link(false);
    expect(linkedW.bindings.map((b) => [b.type, b.from])).toEqual([
      ['uniform', { part: 0, index: 0 }],
      ['read-only-storage', { part: 0, index: 1 }],
      ['storage', { part: 0, index: 2 }],
      ['uniform', { part: 1, index: 0 }],
      ['storage', { part: 1, index: 2 }],
      ['read-only-storage', { part: 1, index: 3 }],
      ['storage', 'sync'],
    ]);
    const types = linkedW.bindings.map((b) => b.type);
    const resources = [u0, src, mid2, u1, dst, twice, sync];
    // without waits (any device): a second dispatch's consumers read what the first one's producers wrote (the
    // counters are not checked: without waits a producer may still add to its counter after the reset)
    await run(linkedW.code, types, [linkedW.workgroups, linkedW.workgroups], [resources, resources]);
    expect([...new Float32Array(await readBuffer(dev.device, dst))]).toEqual([...want]);
    dev.device.queue.writeBuffer(sync, 0, new Uint32Array(4));
    expect(linked.code).toContain('c1_chain_wait();');
    if (!chainsCanWait(dev.caps)) {
      console.log(`chain.test: linked chains with waits need workgroups started in order (chainsCanWait); not on ${dev.caps.adapterInfo.architecture || dev.caps.adapterInfo.vendor}: the GPU lane runs that case`);
    } else {
      // with waits, one dispatch: mid cleared first, so a consumer that read before the producers wrote sees zeros
      dev.device.queue.writeBuffer(mid2, 0, new Float32Array(n));
      dev.device.queue.writeBuffer(dst, 0, new Float32Array(consumerGroups));
      const linkedWait = link(true);
      await run(linkedWait.code, types, [linkedWait.workgroups, linkedWait.workgroups, linkedWait.workgroups], [resources, resources, resources]);
      expect([...new Float32Array(await readBuffer(dev.device, dst))]).toEqual([...want]);
      expect([...new Uint32Array(await readBuffer(dev.device, sync))].slice(0, 2)).toEqual([0, 0]);
      // and again in a later submit (the dispatch reset its counters)
      dev.device.queue.writeBuffer(mid2, 0, new Float32Array(n));
      await run(linkedWait.code, types, [linkedWait.workgroups], [resources]);
      expect([...new Float32Array(await readBuffer(dev.device, dst))]).toEqual([...want]);
    }
    for (const b of [src, twice, mid, u0, u1, dstRef, mid2, dst, sync]) b.destroy();
  });

  it('a part reading vec4 elements of a buffer another part writes as scalars reads them through an accessor; module-scope directives are hoisted', async () => {
    const dev = await testDevice();
    const d = dev.device;
    // part 0 writes words[i] = 3 i + 1 (u32); part 1 reads them as vec4<u32> and stores each vec4's sum
    const writer = /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> words: array<u32>;
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) { words[gid.x] = 3u * gid.x + 1u; }`;
    // (its global diagnostic directive must come before every declaration of the linked module)
    const reader = /* wgsl */ `
diagnostic(off, derivative_uniformity);
@group(0) @binding(0) var<storage, read> quads: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> sums: array<u32>;
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let v = quads[gid.x];
  sums[gid.x] = v.x + v.y + v.z + v.w;
}`;
    const linked = linkChain(
      [
        { code: writer, workgroups: [4, 1, 1], label: 'writer', resources: ['words'] },
        { code: reader, workgroups: [1, 1, 1], label: 'reader', resources: ['words', 'sums'] },
      ],
      65535,
      { waits: false },
    );
    expect(linked.code).toContain('fn c1_quads_at(i: u32) -> vec4<u32>');
    const directive = linked.code.search(/diagnostic\(off, *derivative_uniformity\);/);
    expect(directive).toBeGreaterThanOrEqual(0);
    expect(directive).toBeLessThan(linked.code.indexOf('@group'));
    expect(linked.bindings.map((b) => [b.type, b.from])).toEqual([
      ['storage', { part: 0, index: 0 }],
      ['storage', { part: 1, index: 1 }],
      ['storage', 'sync'],
    ]);
    const words = buf(dev, new Uint32Array(256));
    const sums = buf(dev, new Uint32Array(64));
    const sync = buf(dev, new Uint32Array(4));
    // twice without waits: the second run's reader reads what the first run's writer wrote
    await runTwice(dev, linked, [words, sums, sync]);
    const got = new Uint32Array(await readBuffer(d, sums));
    expect([...got]).toEqual(Array.from({ length: 64 }, (_, i) => [0, 1, 2, 3].reduce((a, j) => a + 3 * (4 * i + j) + 1, 0)));
    // a vec4 writer of a scalar reader's buffer does not link (writes through the scalar array are not rebuilt)
    expect(() =>
      linkChain([
        { code: reader.replace('var<storage, read> quads', 'var<storage, read_write> quads'), workgroups: [1, 1, 1], label: 'vec4 writer', resources: ['words', 'sums'] },
        { code: writer, workgroups: [4, 1, 1], label: 'scalar', resources: ['words'] },
      ]),
    ).toThrow(/vec4 writer: quads writes array<vec4<u32>> to a buffer another part declares array<u32>/);
    for (const b of [words, sums, sync]) b.destroy();
  });

  it('a part reading vec4 elements of a buffer another part writes as vec2 reads them through an accessor of two; element types must agree', async () => {
    const dev = await testDevice();
    const d = dev.device;
    // part 0 writes pairs[i] = (2 i + 0.5, 2 i + 1.5) (vec2<f32>, as linear_rope_kv writes q); part 1 reads them as
    // vec4<f32> (as attention reads q) and stores each vec4's weighted sum
    const writer = /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> pairs: array<vec2<f32>>;
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) { pairs[gid.x] = vec2<f32>(2.0 * f32(gid.x) + 0.5, 2.0 * f32(gid.x) + 1.5); }`;
    const reader = /* wgsl */ `
@group(0) @binding(0) var<storage, read> quads: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> sums: array<f32>;
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  sums[gid.x] = dot(quads[gid.x], vec4<f32>(1.0, 10.0, 100.0, 1000.0));
}`;
    const linked = linkChain(
      [
        { code: writer, workgroups: [2, 1, 1], label: 'writer', resources: ['pairs'] },
        { code: reader, workgroups: [1, 1, 1], label: 'reader', resources: ['pairs', 'sums'] },
      ],
      65535,
      { waits: false },
    );
    expect(linked.code).toContain('fn c1_quads_at(i: u32) -> vec4<f32>');
    expect(linked.code).toContain('var<storage, read_write> c0_pairs: array<vec2<f32>>');
    const pairs = buf(dev, new Float32Array(256));
    const sums = buf(dev, new Float32Array(64));
    const sync = buf(dev, new Uint32Array(4));
    // twice without waits: the second run's reader reads what the first run's writer wrote
    await runTwice(dev, linked, [pairs, sums, sync]);
    const got = new Float32Array(await readBuffer(d, sums));
    // quad i holds floats 4i .. 4i + 3, float j = j + 0.5
    expect([...got]).toEqual(Array.from({ length: 64 }, (_, i) => [1, 10, 100, 1000].reduce((a, w, j) => a + w * (4 * i + j + 0.5), 0)));
    // a u32 reader of an f32 writer's buffer does not link
    expect(() =>
      linkChain([
        { code: writer, workgroups: [2, 1, 1], label: 'writer', resources: ['pairs'] },
        { code: reader.replace('array<vec4<f32>>', 'array<vec4<u32>>').replace('dot(quads[gid.x], vec4<f32>(1.0, 10.0, 100.0, 1000.0))', 'f32(quads[gid.x].x)'), workgroups: [1, 1, 1], label: 'reader', resources: ['pairs', 'sums'] },
      ]),
    ).toThrow(/shared with bindings of other element types/);
    for (const b of [pairs, sums, sync]) b.destroy();
  });

  it('refuses parts whose workgroup sizes differ, and entry points it cannot rebuild, naming the part', () => {
    const other = CONSUMER.replace('@workgroup_size(64, 1, 1)', '@workgroup_size(128, 1, 1)');
    expect(() => linkChain([
      { code: PRODUCER, workgroups: [1, 1, 1], label: 'a' },
      { code: other, workgroups: [1, 1, 1], label: 'b' },
    ])).toThrow(/chain: b: workgroup size 128, but a's is 64/);
    expect(() => linkChain([
      { code: PRODUCER.replace('@workgroup_size(64, 1, 1)', '@workgroup_size(8, 8, 1)'), workgroups: [1, 1, 1], label: 'a' },
      { code: CONSUMER, workgroups: [1, 1, 1], label: 'b' },
    ])).toThrow(ChainLinkError);
    expect(() => linkChain([{ code: PRODUCER, workgroups: [1, 1, 1], label: 'a' }])).toThrow(/two or more parts/);
    // a tail part needs a part of its own before it, with at least its count of workgroups
    expect(() => linkChain([
      { code: PRODUCER, workgroups: [2, 1, 1], label: 'a', tail: true },
      { code: CONSUMER, workgroups: [1, 1, 1], label: 'b' },
    ])).toThrow(/chain: a: a tail part runs in the workgroups of the part before it/);
    expect(() => linkChain([
      { code: PRODUCER, workgroups: [2, 1, 1], label: 'a' },
      { code: CONSUMER, workgroups: [3, 1, 1], label: 'b', tail: true },
    ])).toThrow(/chain: b: 3 workgroups as a tail of a's 2/);
  });
});
