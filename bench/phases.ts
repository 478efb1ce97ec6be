/**
 * Benchmark: can phases chained inside one dispatch replace the dispatch boundaries of a decode step?
 *
 * A decode layer is a chain of dependent kernels (q|k|v, attention, o_proj, gate|up, down); each waits for the last
 * to finish (Dawn puts a pipeline barrier between dispatches that share a written buffer, and the GPU drains), and
 * each then ramps up again. The eighth-to-sixteenth sessions' receipts put that at several us a dispatch. Here every
 * phase is a stand-in for one kernel: its workgroups read their share of its weight bytes (8 vec4 a lane, 32 KiB a
 * workgroup, as bench/bandwidth.ts's fastest pattern), then need the previous phase's outputs (up to 1024 words: a
 * GEMV's activations), then write one word each. Three ways to run the same phases, each in one compute pass:
 *   dispatches   one dispatch a phase (today's decode step: a barrier between each pair)
 *   layers       one dispatch a layer: its phases chained inside it by counters (below)
 *   one          one dispatch for every phase of every layer, chained the same way
 *   free         one dispatch, no waits at all (the bytes' time: the ceiling of the three)
 * Chained inside a dispatch: the workgroups of phase p come after phase p - 1's in workgroup order; each issues its
 * weight loads first, then its lane 0 spins until phase p - 1's counter (an atomic) has every workgroup of that phase,
 * then its lanes read the outputs with atomicLoad, each word until it is non-zero (WGSL's atomics are relaxed and its
 * barriers workgroup-scoped, so the counter alone does not order the outputs' stores before it: each output word
 * carries its own readiness, as a written word is never zero). A phase's workgroups therefore need the earlier
 * phases' to have been started, which GPUs do in workgroup order; this is a measurement of the mechanism, not a
 * guarantee of forward progress WebGPU gives.
 * Every way's final outputs are checked against the same chain computed on the CPU.
 *
 *   node --import tsx bench/phases.ts [--layers 8] [--phases 14155776,lat,9437184,66060288,33030144]
 *     [--lat-iters 2000] [--out receipt.json]
 * --phases: a layer's phases, weight bytes each (multiples of 32 KiB; defaults: Llama-3.1-8B's Q4_K q|k|v, o_proj,
 * gate|up and down), 'lat' a 32-workgroup phase that reads no weights but runs a serial chain of --lat-iters FMAs
 * (decode attention's stand-in: a few workgroups, latency-bound).
 */
import { writeFileSync } from 'node:fs';
import { STORAGE_USAGE, USAGE } from '../src/gpu/buffers.ts';
import { createDevice, describeAdapter } from '../src/gpu/device.ts';
import { receiptHeader } from './commit.ts';

const args = process.argv.slice(2);
if (args.includes('--help')) {
  console.log('usage: node --import tsx bench/phases.ts [--layers N] [--phases b1,lat,b2,...] [--lat-iters N] [--out receipt.json]');
  process.exit(0);
}
const argOf = (name: string) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : undefined);
const posInt = (name: string, dflt: number) => {
  const v = Number(argOf(name) ?? dflt);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} takes a positive integer, not ${argOf(name)}`);
  return v;
};
const layers = posInt('--layers', 8);
const latIters = posInt('--lat-iters', 2000);
const WG_BYTES = 256 * 8 * 16; // 8 vec4 a lane, 256 lanes
const LAT_GROUPS = 32;
const layerPhases = (argOf('--phases') ?? '14155776,lat,9437184,66060288,33030144').split(',').map((s) => {
  if (s === 'lat') return { bytes: 0, groups: LAT_GROUPS, lat: true };
  const b = Number(s);
  if (!Number.isInteger(b) || b <= 0 || b % WG_BYTES) throw new Error(`--phases: ${s} is neither 'lat' nor a positive multiple of ${WG_BYTES} bytes`);
  return { bytes: b, groups: b / WG_BYTES, lat: false };
});

// phase table: [first workgroup, workgroups, first weight vec4, first output word] and [serial FMA iterations, 0, 0, 0]
interface Phase {
  first: number;
  groups: number;
  wOff: number;
  outOff: number;
  iters: number;
}
const phases: Phase[] = [];
let wg = 0;
let wVec4 = 0;
const nPhases = layers * layerPhases.length;
let outWord = nPhases; // counters first
for (let l = 0; l < layers; l++) {
  for (const p of layerPhases) {
    phases.push({ first: wg, groups: p.groups, wOff: wVec4, outOff: outWord, iters: p.lat ? latIters : 0 });
    wg += p.groups;
    wVec4 += p.bytes / 16;
    outWord += p.groups;
  }
}
const totalBytes = wVec4 * 16;

const SHADER = /* wgsl */ `
@group(0) @binding(0) var<storage, read> W: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> phases: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> sync: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> u: vec4<u32>; // x: this dispatch's first global workgroup, y: phases, z: 1 = no waits
var<workgroup> wsum: atomic<u32>;
var<workgroup> wx: atomic<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32, @builtin(num_workgroups) nw: vec3<u32>) {
  let g = u.x + wid.x + wid.y * nw.x;
  var p = 0u;
  loop {
    if (p + 1u >= u.y || phases[2u * (p + 1u)].x > g) { break; }
    p++;
  }
  let ph = phases[2u * p];
  let iters = phases[2u * p + 1u].x;
  let w = g - ph.x;
  if (w >= ph.y) { return; }
  if (li == 0u) {
    atomicStore(&wsum, 0u);
    atomicStore(&wx, 0u);
  }
  // the phase's weight loads, before any wait
  var lx = vec4<u32>(0u);
  if (iters == 0u) {
    let b = ph.z + w * 2048u + li;
    lx = W[b] ^ W[b + 256u] ^ W[b + 512u] ^ W[b + 768u] ^ W[b + 1024u] ^ W[b + 1280u] ^ W[b + 1536u] ^ W[b + 1792u];
  }
  // the previous phase's counter
  if (p > 0u && u.z == 0u && li == 0u) {
    let need = phases[2u * (p - 1u)].y;
    loop {
      if (atomicLoad(&sync[p - 1u]) >= need) { break; }
    }
  }
  workgroupBarrier();
  var s = 0u;
  if (p > 0u) {
    let q = phases[2u * (p - 1u)];
    let n = min(q.y, 1024u);
    for (var j = li; j < n; j += 256u) {
      var v = atomicLoad(&sync[q.w + j]);
      loop {
        if (v != 0u || u.z != 0u) { break; }
        v = atomicLoad(&sync[q.w + j]);
      }
      s += v;
    }
  }
  // the latency-bound stand-in: a serial FMA chain on lane 0 (decode attention: a few workgroups, long chains)
  if (iters > 0u && li == 0u) {
    var a = f32(s & 255u);
    for (var k = 0u; k < iters; k++) { a = a * 0.999 + 1.0; }
    if (a < 0.0) { s += 1u; } // never: a stays positive; keeps the chain
  }
  atomicAdd(&wsum, s);
  atomicXor(&wx, lx.x ^ lx.y ^ lx.z ^ lx.w);
  workgroupBarrier();
  if (li == 0u) {
    let o = ((atomicLoad(&wsum) * 3u + w + 1u) ^ atomicLoad(&wx)) | 1u;
    atomicStore(&sync[ph.w + w], o);
    atomicAdd(&sync[p], 1u);
  }
}`;

// the chain on the CPU (the weights are zeros, so every XOR of loads is 0)
function expected(): Uint32Array {
  const out = new Uint32Array(outWord);
  for (const [p, ph] of phases.entries()) {
    out[p] = ph.groups;
    let s = 0;
    if (p > 0) {
      const q = phases[p - 1]!;
      for (let j = 0; j < Math.min(q.groups, 1024); j++) s = (s + out[q.outOff + j]!) >>> 0;
    }
    // every lane's share is summed: the lanes together read the words once
    for (let w = 0; w < ph.groups; w++) out[ph.outOff + w] = ((Math.imul(s, 3) + w + 1) >>> 0) | 1;
  }
  return out;
}

const dev = await createDevice({ timestamps: true });
if (!dev.timestamps) throw new Error('bench/phases.ts needs timestamp-query');
const d = dev.device;
const maxBind = dev.caps.limits.maxStorageBufferBindingSize ?? 0;
if (totalBytes > maxBind) throw new Error(`${layers} layers of ${totalBytes / layers} weight bytes need a ${totalBytes}-byte binding; this device binds at most ${maxBind} (pass fewer --layers)`);
const adapter = describeAdapter(dev.caps);
const { pipeline, layout } = await dev.pipelines.get({
  code: SHADER,
  entryPoint: 'main',
  layout: [
    { binding: 0, type: 'read-only-storage' },
    { binding: 1, type: 'read-only-storage' },
    { binding: 2, type: 'storage' },
    { binding: 3, type: 'uniform' },
  ],
  label: 'bench.phases',
});
const weights = d.createBuffer({ size: Math.max(16, totalBytes), usage: STORAGE_USAGE, label: 'bench.phases.weights' });
const table = d.createBuffer({ size: phases.length * 32, usage: STORAGE_USAGE, label: 'bench.phases.table' });
d.queue.writeBuffer(table, 0, new Uint32Array(phases.flatMap((p) => [p.first, p.groups, p.wOff, p.outOff, p.iters, 0, 0, 0])));
const sync = d.createBuffer({ size: outWord * 4, usage: STORAGE_USAGE, label: 'bench.phases.sync' });
const maxX = dev.caps.limits.maxComputeWorkgroupsPerDimension ?? 65535;

type Launch = { first: number; groups: number };
const uniforms = new Map<string, GPUBindGroup>();
const bindGroup = (first: number, free: boolean) => {
  const key = `${first}:${free}`;
  let bg = uniforms.get(key);
  if (!bg) {
    const ub = d.createBuffer({ size: 16, usage: USAGE.UNIFORM | USAGE.COPY_DST, label: `bench.phases.u${key}` });
    d.queue.writeBuffer(ub, 0, new Uint32Array([first, phases.length, free ? 1 : 0, 0]));
    bg = d.createBindGroup({ layout, entries: [{ binding: 0, resource: { buffer: weights } }, { binding: 1, resource: { buffer: table } }, { binding: 2, resource: { buffer: sync } }, { binding: 3, resource: { buffer: ub } }] });
    uniforms.set(key, bg);
  }
  return bg;
};

/** GPU ms of one pass of `launches` (sync cleared first), and the sync words it left. */
async function run(launches: Launch[], free: boolean, read = false): Promise<{ ms: number; words?: Uint32Array }> {
  const qs = d.createQuerySet({ type: 'timestamp', count: 2 });
  const resolve = d.createBuffer({ size: 16, usage: USAGE.QUERY_RESOLVE | USAGE.COPY_SRC });
  const back = d.createBuffer({ size: 16, usage: USAGE.MAP_READ | USAGE.COPY_DST });
  const words = read ? d.createBuffer({ size: sync.size, usage: USAGE.MAP_READ | USAGE.COPY_DST }) : undefined;
  const enc = d.createCommandEncoder();
  enc.clearBuffer(sync);
  const pass = enc.beginComputePass({ timestampWrites: { querySet: qs, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } });
  pass.setPipeline(pipeline);
  for (const l of launches) {
    pass.setBindGroup(0, bindGroup(l.first, free));
    pass.dispatchWorkgroups(Math.min(l.groups, maxX), Math.ceil(l.groups / maxX), 1);
  }
  pass.end();
  enc.resolveQuerySet(qs, 0, 2, resolve, 0);
  enc.copyBufferToBuffer(resolve, 0, back, 0, 16);
  if (words) enc.copyBufferToBuffer(sync, 0, words, 0, sync.size);
  d.queue.submit([enc.finish()]);
  await back.mapAsync(GPUMapMode.READ);
  const t = new BigUint64Array(back.getMappedRange().slice(0));
  back.destroy();
  resolve.destroy();
  qs.destroy();
  let out: Uint32Array | undefined;
  if (words) {
    await words.mapAsync(GPUMapMode.READ);
    out = new Uint32Array(words.getMappedRange().slice(0));
    words.destroy();
  }
  return { ms: Number(t[1]! - t[0]!) / 1e6, ...(out ? { words: out } : {}) };
}

const perLayer = layerPhases.length;
const ways: Record<string, { launches: Launch[]; free: boolean }> = {
  dispatches: { launches: phases.map((p) => ({ first: p.first, groups: p.groups })), free: false },
  layers: {
    launches: Array.from({ length: layers }, (_, l) => {
      const a = phases[l * perLayer]!;
      const b = phases[l * perLayer + perLayer - 1]!;
      return { first: a.first, groups: b.first + b.groups - a.first };
    }),
    free: false,
  },
  one: { launches: [{ first: 0, groups: wg }], free: false },
  free: { launches: [{ first: 0, groups: wg }], free: true },
};
// correctness first (and the pipelines warm): every chained way's outputs against the CPU's chain
const want = expected();
const checks: Record<string, string> = {};
for (const [name, w] of Object.entries(ways)) {
  if (w.free) continue;
  const { words } = await run(w.launches, false, true);
  const bad = want.findIndex((v, i) => words![i] !== v);
  checks[name] = bad < 0 ? 'ok' : `word ${bad}: ${words![bad]} (want ${want[bad]})`;
  if (bad >= 0) console.log(`  ${name}: outputs differ from the CPU's chain at ${checks[name]}`);
}
// ~100 ms of work first (the GPU's clocks rise under load), then the ways alternated, best of `rounds`
for (const t0 = performance.now(); performance.now() - t0 < 100; ) await run(ways.free!.launches, true);
const rounds = posInt('--rounds', 7);
const times: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
for (let r = 0; r < rounds; r++) for (const [name, w] of Object.entries(ways)) times[name]!.push((await run(w.launches, w.free)).ms);
const us = (ms: number) => Math.round(ms * 1e5) / 100;
const figures = Object.fromEntries(
  Object.entries(times).map(([k, v]) => {
    const best = Math.min(...v);
    return [k, { usPerLayer: us(best / layers), GBs: Math.round(totalBytes / best / 1e6), dispatches: ways[k]!.launches.length }];
  }),
);
console.log(`${adapter}: ${layers} layers of phases [${layerPhases.map((p) => (p.lat ? `lat ${latIters}` : `${(p.bytes / 2 ** 20).toFixed(1)} MiB`)).join(', ')}], ${wg} workgroups, ${(totalBytes / 2 ** 20).toFixed(0)} MiB`);
for (const [k, f] of Object.entries(figures)) console.log(`  ${k}: ${f.usPerLayer} us a layer, ${f.GBs} GB/s (${f.dispatches} dispatches; check ${checks[k] ?? '-'})`);
const out = argOf('--out');
if (out) {
  writeFileSync(out, JSON.stringify({ ...receiptHeader('phases', dev), layers, layerPhases, latIters, rounds, method: 'see the header of bench/phases.ts: one compute pass per way, pass-span timestamps, best of the rounds, the ways alternated', figures, checks, times }, null, 2) + '\n');
  console.log(`receipt: ${out}`);
}
process.exit(0);
