/**
 * Benchmark: what a dispatch costs on the GPU beside the bytes it reads: the question behind decode steps of
 * ~100-230 dispatches. One compute pass per case, GPU time from timestamps at the pass's start and end (best of 5):
 *   tiny-dependent      N one-workgroup dispatches that all read and write the same buffer (each waits for the last)
 *   tiny-independent    N one-workgroup dispatches, each on its own buffer (the driver may overlap them)
 *   read-dependent      N dispatches that each stream one weight-sized buffer (rotating over copies that together
 *                       exceed the L2) and write the same small buffer
 *   read-independent    the same reads, each writing its own small buffer
 *   read-one            one dispatch streaming all the copies once: the bytes' time with a single launch
 * Per dispatch: (case time) / N; fixed cost of a streaming dispatch = read-dependent / N - (read-one / copies).
 * L2 prefetch (can a latency-bound dispatch, e.g. decode attention, pull the next GEMV's weights into the L2 while
 * the DRAM idles?), over `--pf-copies` buffers of `--pf-bytes` (an 8B layer's o_proj in Q4_K) that together exceed
 * the L2, N pairs each:
 *   lat                 a one-workgroup serial kernel (the latency-bound stand-in) alone
 *   lat-read            lat, then a read of the next buffer (cold)
 *   lat-pf-read         lat with extra workgroups that read the next buffer, then the read of it
 *   read-hot            reads of one buffer that stays in the L2
 *
 * Read patterns (what a weight-streaming dispatch of a GEMV's size can reach; copies rotate past the L2), at the 8B
 * layer's Q4_K sizes (o_proj 9.4 MB, down 33 MB, gate|up 66 MB), GB/s per dispatch, N dispatches each:
 *   stride              the read above: grid-stride loop, 8 vec4 a thread, one load in flight per turn
 *   chunk8 / chunk16    each workgroup one contiguous chunk, every thread's 8 or 16 vec4 loads issued before any sum
 * GEMV-shaped reads (is the decode GEMV's gap to those reads its memory pattern or its arithmetic?): Q4_K weights of
 * the 8B layer's shapes read with the int8 GEMV's work split (gemv-q8a.wgsl.jinja: items of C columns per 32-lane
 * subgroup, lanes on 16-byte nibble slots, U slots a lane a loop turn, each slot with its block's 16-byte header)
 * and no arithmetic but an XOR, GB/s per dispatch:
 *   gemv items/wg/cols/unroll      the GEMV's loads (header and nibbles of every slot)
 *   ... nohdr                      the nibbles only (what the headers' extra loads cost)
 * Q8_0-shaped reads (q80Shader below): the Q8_0 rows GEMV's 9-word loads of 34-byte blocks against the same bytes read
 * coalesced, at 4096x14336 and 14336x4096.
 * KV-shaped reads (kvShader below; is decode attention's gap to those reads its K loads?): an f16 cache of
 * `--kv-keys` keys (K and V: 2 x keys x 8 KV heads x 128 dims), a workgroup of 128 lanes per (128 rows, KV head), 16
 * loads of 16 bytes a lane, no arithmetic but an XOR, GB/s per dispatch:
 *   row a lane       lane i loads all of row i (as decode_short_lanes loads K, and the tiles walk did before
 *                    splitKOrder shares: each load instruction takes 16 bytes of 32 rows 2 KB apart)
 *   coalesced        load v of lane i takes 16 bytes i % 16 of row 8 v + i / 16 (16 lanes a 256-byte row)
 * Every case runs after ~100 ms of reads (the GPU's clocks up).
 *
 *   node --import tsx bench/dispatch.ts [--bytes 33030144] [--copies 4] [--n 64] [--pf-bytes 9437184]
 *     [--pf-copies 8] [--lat-iters 4000] [--gemv-shapes 4096x14336,28672x4096,6144x4096] [--kv-keys 8192] [--out receipt.json]
 */
import { writeFileSync } from 'node:fs';
import { STORAGE_USAGE } from '../src/gpu/buffers.ts';
import { createDevice, describeAdapter } from '../src/gpu/device.ts';
import { Recorder } from '../src/gpu/recorder.ts';
import { chunkShader, readShader } from './bandwidth.ts';
import { receiptHeader } from './commit.ts';
import { lines } from './gpu-bench.ts';

const args = process.argv.slice(2);
if (args.includes('--help')) {
  console.log('usage: node --import tsx bench/dispatch.ts [--bytes N] [--copies N] [--n N] [--out receipt.json]');
  process.exit(0);
}
const opt = (name: string, dflt: number): number => {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const v = Number(args[i + 1]);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} takes a positive integer, not ${args[i + 1]}`);
  return v;
};
// default: the Q4_K bytes of a 14336 x 4096 weight (Llama-3.1-8B's down / gate shapes)
const bytes = Math.ceil(opt('--bytes', (14336 * 4096 * 144) / 256) / 4096) * 4096;
const copies = opt('--copies', 4);
const n = opt('--n', 64);
const pfBytes = Math.ceil(opt('--pf-bytes', (4096 * 4096 * 144) / 256) / 4096) * 4096;
const pfCopies = opt('--pf-copies', 8);
const latIters = opt('--lat-iters', 4000);

// one read-modify-write: consecutive dispatches on the same dst depend on each other
const READ = readShader('  if (g.x == 0u) { dst[1] = dst[1] + 1.0; }\n');
const TINY = /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) i: u32) { dst[i] = dst[i] * 0.5 + 1.0; }`;

// workgroup 0: a serial FMA chain (latency-bound, one SM busy); the others, when the dispatch has them, read `pf`
// (8 vec4 a thread), keeping the loads alive without writing
const LAT = /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> dst: array<f32>;
@group(0) @binding(1) var<storage, read> pf: array<vec4<u32>>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) g: vec3<u32>, @builtin(local_invocation_index) i: u32) {
  if (g.x == 0u) {
    var a = dst[i];
    for (var k = 0u; k < ${latIters}u; k++) { a = a * 0.999 + 1.0; }
    dst[i] = a;
    return;
  }
  var acc = vec4<u32>(0u);
  let base = (g.x - 1u) * 2048u + i;
  for (var k = 0u; k < 8u; k++) { let j = base + k * 256u; if (j < arrayLength(&pf)) { acc ^= pf[j]; } }
  if (all(acc == vec4<u32>(0x12345678u))) { dst[300] = 1.0; }
}`;

// the int8 GEMV's loads over Q4_K rows of K / 256 blocks of 9 vec4 (header, 8 nibble slots), N rows: workgroup
// tile t takes items t * I .. of C consecutive rows; subgroup (32 lanes) s takes items s, s + WG / 32, ...; lane l
// slots l, l + 32, ... U a turn (clamped to the row's last slot, as the GEMV does); the words are XORed, so every
// load is kept and nothing is computed
const gemvShader = (N: number, K: number, items: number, wg: number, cols: number, unroll: number, hdr: boolean) => {
  const loads = (u: number) =>
    `      let s${u} = min(s0 + ${32 * u}u, nslots - 1u);\n` +
    lines(cols, (c) => (hdr ? `      let h${u}_${c} = B[row${c} + (s${u} / 8u) * 9u];\n` : '') + `      let q${u}_${c} = B[row${c} + (s${u} / 8u) * 9u + 1u + s${u} % 8u];`);
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read> B: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) g: vec3<u32>, @builtin(local_invocation_index) li: u32, @builtin(num_workgroups) nw: vec3<u32>) {
  let lane = li % 32u;
  let sid = li / 32u;
  let nb = ${K / 256}u;
  let nslots = nb * 8u;
  let col0 = (g.x + g.y * nw.x) * ${items * cols}u;
  var acc = vec4<u32>(0u);
  for (var item = sid; item < ${items}u; item += ${wg / 32}u) {
    let n0 = col0 + item * ${cols}u;
    if (n0 >= ${N}u) { break; }
${lines(cols, (c) => `    let row${c} = min(n0 + ${c}u, ${N - 1}u) * nb * 9u;`)}
    for (var s0 = lane; s0 < nslots; s0 += ${32 * unroll}u) {
${lines(unroll, loads)}
${lines(unroll, (u) => lines(cols, (c) => `      acc ^= q${u}_${c}${hdr ? ` ^ h${u}_${c}` : ''};`))}
    }
  }
  if (all(acc == vec4<u32>(0x12345678u))) { dst[li] = 1.0; }
}`;
};

// The Q8_0 rows GEMV's loads (gemv-q8a.wgsl.jinja, weightFormat q8_0): rows of K / 32 blocks of 34 bytes; a workgroup
// of `lanes` lanes walks RB consecutive rows, 4 at a time, lane l reading block l of each row as the 9 u32 words that
// cover it (34-byte blocks are 2-byte aligned, so each load instruction spans ~34 bytes a lane: ~9x the sectors of a
// coalesced one). 'coalesced': the same workgroups read the same RB rows' bytes as consecutive vec4 (16 bytes a lane a
// load). Both XOR every word and compute nothing.
const q80Shader = (N: number, K: number, rb: number, coalesced: boolean) => {
  const nb = K / 32;
  const lanes = 32 * Math.ceil(nb / 32);
  const rowWords = (nb * 34) / 4; // K % 64 == 0: whole words a row
  const body = coalesced
    ? `  let n16 = ${(rb * rowWords) / 4}u; // the block of rows, in vec4
  let base = r0 * ${rowWords / 4}u;
  for (var i = li; i < n16; i += ${lanes * 4}u) {
${lines(4, (u) => `    let v${u} = B4[min(base + min(i + ${u * lanes}u, n16 - 1u), arrayLength(&B4) - 1u)];`)}
    acc ^= v0 ^ v1 ^ v2 ^ v3;
  }`
    : `  let b = min(li, ${nb - 1}u);
  for (var r = 0u; r < ${rb}u; r += 4u) {
${lines(4, (u) => `    let w${u} = (min(r0 + r + ${u}u, ${N - 1}u) * ${rowWords}u + (b * 34u) / 4u);
${lines(9, (j) => `    let x${u}_${j} = B[w${u} + ${j}u];`)}`)}
${lines(4, (u) => `    acc.x ^= ${Array.from({ length: 9 }, (_, j) => `x${u}_${j}`).join(' ^ ')};`)}
  }`;
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read> B: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> B4: array<vec4<u32>>;
@compute @workgroup_size(${lanes})
fn main(@builtin(workgroup_id) g: vec3<u32>, @builtin(local_invocation_index) li: u32, @builtin(num_workgroups) nw: vec3<u32>) {
  let r0 = (g.x + g.y * nw.x) * ${rb}u;
  var acc = vec4<u32>(0u);
${body}
  // every lane's folded XOR decides a store: a keep-alive the compiler cannot drop. (With all(acc == ...) as in the
  // shaders above, the word form, which XORs into acc.x only, ran in 1.5 us for 62 MB on the H200: acc.yzw are known
  // zeros, so the test is known false. Storing lane 0's XOR alone lets the compiler sink the other lanes' loads into
  // that lane's branch, as the KV probe's first form did.)
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678u) { dst[(g.x + g.y * nw.x) % 1024u] = 1.0; }
}`;
};

// KV-shaped reads: the cache [rows, 8, 16 vec4] (f16, 128 dims), a workgroup per (128 rows, KV head g = workgroup_id.y)
const kvShader = (rowALane: boolean) => /* wgsl */ `
@group(0) @binding(0) var<storage, read> B: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) g: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let r0 = g.x * 128u;
  var acc = vec4<u32>(0u);
${Array.from({ length: 16 }, (_, v) => (rowALane ? `  let x${v} = B[((r0 + li) * 8u + g.y) * 16u + ${v}u];` : `  let x${v} = B[((r0 + ${8 * v}u + li / 16u) * 8u + g.y) * 16u + li % 16u];`)).join('\n')}
  acc = ${Array.from({ length: 16 }, (_, v) => `x${v}`).join(' ^ ')};
  // every lane's XOR decides a store (a store by lane 0 alone let the compiler sink the other lanes' loads into its
  // branch: the first H200 run read 33.5 MB in 3.1 us, 10.9 TB/s)
  if (all(acc == vec4<u32>(0x12345678u))) { dst[(g.x * 8u + g.y) % 1024u] = 1.0; }
}`;

const dev = await createDevice({ timestamps: true });
if (!dev.timestamps) throw new Error('bench/dispatch.ts needs timestamp-query');
const adapter = describeAdapter(dev.caps);
const d = dev.device;
// a read of binding 0 into binding 1 (READ and the chunked reads below)
const readPipeline = (code: string, label: string) => dev.pipelines.get({ code, entryPoint: 'main', layout: [{ binding: 0, type: 'read-only-storage' }, { binding: 1, type: 'storage' }], label });
const read = await readPipeline(READ, 'bench.dispatch.read');
const tiny = await dev.pipelines.get({ code: TINY, entryPoint: 'main', layout: [{ binding: 0, type: 'storage' }], label: 'bench.dispatch.tiny' });
const lat = await dev.pipelines.get({ code: LAT, entryPoint: 'main', layout: [{ binding: 0, type: 'storage' }, { binding: 1, type: 'read-only-storage' }], label: 'bench.dispatch.lat' });
const small = Array.from({ length: n }, (_, i) => d.createBuffer({ size: 4096, usage: STORAGE_USAGE, label: `bench.dispatch.small${i}` }));
const srcs = Array.from({ length: copies }, (_, i) => d.createBuffer({ size: bytes, usage: STORAGE_USAGE, label: `bench.dispatch.src${i}` }));
const all = d.createBuffer({ size: bytes * copies <= (dev.caps.limits.maxStorageBufferBindingSize ?? 0) ? bytes * copies : bytes, usage: STORAGE_USAGE, label: 'bench.dispatch.all' });
const groups = (size: number) => Math.min(65535, Math.ceil(size / 16 / 256 / 8));
const pfs = Array.from({ length: pfCopies }, (_, i) => d.createBuffer({ size: pfBytes, usage: STORAGE_USAGE, label: `bench.dispatch.pf${i}` }));
const latBg = (pf: GPUBuffer) => d.createBindGroup({ layout: lat.layout, entries: [{ binding: 0, resource: { buffer: small[1]! } }, { binding: 1, resource: { buffer: pf } }] });
const srcDstBg = (layout: GPUBindGroupLayout, src: GPUBuffer, dst: GPUBuffer) => d.createBindGroup({ layout, entries: [{ binding: 0, resource: { buffer: src } }, { binding: 1, resource: { buffer: dst } }] });
const readBg = (src: GPUBuffer, dst: GPUBuffer) => srcDstBg(read.layout, src, dst);
const tinyBg = (dst: GPUBuffer) => d.createBindGroup({ layout: tiny.layout, entries: [{ binding: 0, resource: { buffer: dst } }] });

/** Best of 5 GPU times (ms) of one pass holding the dispatches `make` gives. */
async function pass(make: () => { pipeline: GPUComputePipeline; bindGroup: GPUBindGroup; workgroups: [number, number, number] }[]): Promise<number> {
  const ds = make();
  let best = Infinity;
  for (let r = 0; r < 6; r++) {
    const rec = new Recorder(dev, { timestamps: 'span' });
    for (const x of ds) rec.dispatch({ label: 'bench.dispatch', ...x });
    const [t] = await rec.submit();
    if (r > 0) best = Math.min(best, t!.ms);
  }
  return best;
}

const us = (ms: number) => Math.round(ms * 1e5) / 100;
const one = (pipeline: GPUComputePipeline, bindGroup: GPUBindGroup, g: number) => ({ pipeline, bindGroup, workgroups: [g, 1, 1] as [number, number, number] });
// ~100 ms of reads first: the GPU's clocks rise under load (the H200's SM clock idles at 345 MHz, 1980 MHz busy).
// Batches waited for until 100 ms have passed (a fixed count of reads would be ~4 ms on the H200, seconds on a CPU).
for (const t0 = performance.now(); performance.now() - t0 < 100; ) {
  const heat = new Recorder(dev, { timestamps: false });
  for (let i = 0; i < 32; i++) heat.dispatch({ label: 'bench.dispatch.heat', pipeline: read.pipeline, bindGroup: readBg(srcs[i % copies]!, small[0]!), workgroups: [groups(bytes), 1, 1] });
  await heat.submit({ wait: true });
}
const tinyDep = await pass(() => Array.from({ length: n }, () => one(tiny.pipeline, tinyBg(small[0]!), 1)));
const tinyInd = await pass(() => small.map((b) => one(tiny.pipeline, tinyBg(b), 1)));
const readDep = await pass(() => Array.from({ length: n }, (_, i) => one(read.pipeline, readBg(srcs[i % copies]!, small[0]!), groups(bytes))));
const readInd = await pass(() => small.map((b, i) => one(read.pipeline, readBg(srcs[i % copies]!, b), groups(bytes))));
const readOne = await pass(() => [one(read.pipeline, readBg(all, small[0]!), groups(all.size))]);
const pfGroups = Math.ceil(pfBytes / 16 / 2048);
const latOnly = await pass(() => Array.from({ length: n }, (_, i) => one(lat.pipeline, latBg(pfs[i % pfCopies]!), 1)));
const latRead = await pass(() => Array.from({ length: n }, (_, i) => [one(lat.pipeline, latBg(pfs[i % pfCopies]!), 1), one(read.pipeline, readBg(pfs[i % pfCopies]!, small[0]!), groups(pfBytes))]).flat());
const latPfRead = await pass(() => Array.from({ length: n }, (_, i) => [one(lat.pipeline, latBg(pfs[i % pfCopies]!), 1 + pfGroups), one(read.pipeline, readBg(pfs[i % pfCopies]!, small[0]!), groups(pfBytes))]).flat());
const readHot = await pass(() => Array.from({ length: n }, () => one(read.pipeline, readBg(pfs[0]!, small[0]!), groups(pfBytes))));
// read patterns at GEMV sizes, copies past the L2
const patterns: Record<string, number> = {};
const chunks = await Promise.all([8, 16].map(async (u) => ({ u, ...(await readPipeline(chunkShader(u), `bench.dispatch.chunk${u}`)) })));
for (const size of [9437184, 33030144, 66060288]) {
  const bufs = Array.from({ length: Math.ceil(2 ** 28 / size) }, (_, i) => d.createBuffer({ size, usage: STORAGE_USAGE, label: `bench.dispatch.pattern${i}` }));
  const mb = (size / 2 ** 20).toFixed(1);
  const gbs = (ms: number) => Math.round((size * n) / ms / 1e6);
  patterns[`stride ${mb} MiB`] = gbs(await pass(() => Array.from({ length: n }, (_, i) => one(read.pipeline, readBg(bufs[i % bufs.length]!, small[0]!), groups(size)))));
  for (const { u, pipeline, layout } of chunks) {
    const wgs = Math.ceil(size / 16 / (u * 256));
    patterns[`chunk${u} ${mb} MiB`] = gbs(await pass(() => Array.from({ length: n }, (_, i) => ({ pipeline, bindGroup: srcDstBg(layout, bufs[i % bufs.length]!, small[0]!), workgroups: [Math.min(wgs, 65535), Math.ceil(wgs / 65535), 1] as [number, number, number] }))));
  }
  for (const b of bufs) b.destroy();
}
// GEMV-shaped reads at the 8B layer's shapes (weights rotating past the L2), work splits the GEMV sweeps lead with
const gemvShapes = (args.indexOf('--gemv-shapes') >= 0 ? args[args.indexOf('--gemv-shapes') + 1]! : '4096x14336,28672x4096,6144x4096').split(',').map((x) => x.split('x').map(Number) as [number, number]);
const splits: [number, number, number, number, boolean][] = [
  [8, 256, 2, 2, true],
  [8, 256, 2, 2, false],
  [8, 256, 2, 4, true],
  [8, 256, 4, 1, true],
  [1, 32, 2, 2, true],
];
const gemvReads: Record<string, { us: number; GBs: number }> = {};
for (const [N, K] of gemvShapes) {
  if (K % 256 !== 0) throw new Error(`--gemv-shapes: K = ${K} is not a multiple of 256`);
  const size = (N * K * 144) / 256;
  const bufs = Array.from({ length: Math.ceil(2 ** 28 / size) }, (_, i) => d.createBuffer({ size, usage: STORAGE_USAGE, label: `bench.dispatch.gemv${i}` }));
  for (const [items, wg, cols, unroll, hdr] of splits) {
    const { pipeline, layout } = await readPipeline(gemvShader(N, K, items, wg, cols, unroll, hdr), `bench.dispatch.gemv.${items}.${wg}.${cols}.${unroll}${hdr ? '' : '.nohdr'}`);
    const tiles = Math.ceil(N / (items * cols));
    const ms = await pass(() => Array.from({ length: n }, (_, i) => ({ pipeline, bindGroup: srcDstBg(layout, bufs[i % bufs.length]!, small[0]!), workgroups: [Math.min(tiles, 65535), Math.ceil(tiles / 65535), 1] as [number, number, number] })));
    gemvReads[`${N}x${K} gemv ${items}/${wg}/${cols}/${unroll}${hdr ? '' : ' nohdr'}`] = { us: us(ms / n), GBs: Math.round((size * n) / ms / 1e6) };
  }
  for (const b of bufs) b.destroy();
}
// Q8_0-shaped reads at the decode GEMV shapes (N x K), 16 rows a workgroup
const q80Reads: Record<string, { us: number; GBs: number }> = {};
for (const [N, K] of [
  [4096, 14336],
  [14336, 4096],
]) {
  const size = (N * K * 34) / 32;
  if (32 * Math.ceil(K! / 32 / 32) > (dev.caps.limits.maxComputeInvocationsPerWorkgroup ?? 256)) {
    console.log(`  (Q8_0-shaped reads at ${N}x${K}: a workgroup of one lane a block exceeds this device's workgroup limit; skipped)`);
    continue;
  }
  const bufs = Array.from({ length: Math.ceil(2 ** 28 / size) }, (_, i) => d.createBuffer({ size, usage: STORAGE_USAGE, label: `bench.dispatch.q80${i}` }));
  for (const coalesced of [false, true]) {
    const layout = [
      { binding: 0, type: 'read-only-storage' as const },
      { binding: 1, type: 'storage' as const },
      { binding: 2, type: 'read-only-storage' as const },
    ];
    const { pipeline, layout: bgl } = await dev.pipelines.get({ code: q80Shader(N!, K!, 16, coalesced), entryPoint: 'main', layout, label: `bench.dispatch.q80.${coalesced ? 'coalesced' : 'words'}` });
    const tiles = Math.ceil(N! / 16);
    const bg = (b: GPUBuffer) => d.createBindGroup({ layout: bgl, entries: [{ binding: 0, resource: { buffer: b } }, { binding: 1, resource: { buffer: small[0]! } }, { binding: 2, resource: { buffer: b } }] });
    const ms = await pass(() => Array.from({ length: n }, (_, i) => ({ pipeline, bindGroup: bg(bufs[i % bufs.length]!), workgroups: [tiles, 1, 1] as [number, number, number] })));
    q80Reads[`${N}x${K} q8_0 rows ${coalesced ? 'coalesced vec4' : '9 words a block'}`] = { us: us(ms / n), GBs: Math.round((size * n) / ms / 1e6) };
  }
  for (const b of bufs) b.destroy();
}
// KV-shaped reads (K and V of --kv-keys keys, 8 KV heads of 128 f16 dims), copies past the L2
const kvKeys = opt('--kv-keys', 8192);
const kvReads: Record<string, { us: number; GBs: number }> = {};
{
  const rows = 2 * kvKeys;
  const size = rows * 8 * 256;
  const bufs = Array.from({ length: Math.max(2, Math.ceil(2 ** 28 / size)) }, (_, i) => d.createBuffer({ size, usage: STORAGE_USAGE, label: `bench.dispatch.kv${i}` }));
  for (const rowALane of [true, false, true, false]) {
    const { pipeline, layout } = await readPipeline(kvShader(rowALane), `bench.dispatch.kv.${rowALane ? 'row' : 'coalesced'}`);
    const ms = await pass(() => Array.from({ length: n }, (_, i) => ({ pipeline, bindGroup: srcDstBg(layout, bufs[i % bufs.length]!, small[0]!), workgroups: [Math.ceil(rows / 128), 8, 1] as [number, number, number] })));
    const key = `${kvKeys} keys ${rowALane ? 'row a lane' : 'coalesced'}`;
    const f = { us: us(ms / n), GBs: Math.round((size * n) / ms / 1e6) };
    kvReads[key] = kvReads[key] ? { us: Math.min(kvReads[key].us, f.us), GBs: Math.max(kvReads[key].GBs, f.GBs) } : f;
  }
  for (const b of bufs) b.destroy();
}
const perByteMs = readOne / all.size;
const figures = {
  tinyDependentUsPerDispatch: us(tinyDep / n),
  tinyIndependentUsPerDispatch: us(tinyInd / n),
  readDependentUsPerDispatch: us(readDep / n),
  readIndependentUsPerDispatch: us(readInd / n),
  readOneGBs: Math.round(all.size / readOne / 1e6),
  readBytesUs: us(perByteMs * bytes),
  fixedUsPerReadDispatch: us(readDep / n - perByteMs * bytes),
  latUs: us(latOnly / n),
  latThenColdReadUs: us(latRead / n),
  latPrefetchThenReadUs: us(latPfRead / n),
  hotReadUs: us(readHot / n),
  prefetchSavesUs: us((latRead - latPfRead) / n),
};
console.log(`${adapter}: ${n} dispatches, reads of ${bytes} bytes over ${copies} copies`);
for (const [k, v] of Object.entries(figures)) console.log(`  ${k}: ${v}`);
for (const [k, v] of Object.entries(patterns)) console.log(`  read ${k}: ${v} GB/s a dispatch`);
for (const [k, v] of Object.entries(gemvReads)) console.log(`  read ${k}: ${v.us} us, ${v.GBs} GB/s a dispatch`);
for (const [k, v] of Object.entries(q80Reads)) console.log(`  read ${k}: ${v.us} us, ${v.GBs} GB/s a dispatch`);
for (const [k, v] of Object.entries(kvReads)) console.log(`  read ${k} (KV-shaped, best of two): ${v.us} us, ${v.GBs} GB/s a dispatch`);
const out = args.indexOf('--out') >= 0 ? args[args.indexOf('--out') + 1] : undefined;
if (out) {
  writeFileSync(out, JSON.stringify({ ...receiptHeader('dispatch', dev), bytes, copies, n, pfBytes, pfCopies, latIters, method: 'see the header of bench/dispatch.ts: one compute pass per case, pass-span timestamps, best of 5', figures, readPatternsGBs: patterns, gemvShapedReads: gemvReads, q80ShapedReads: q80Reads, kvShapedReads: kvReads }, null, 2) + '\n');
  console.log(`receipt: ${out}`);
}
process.exit(0);
