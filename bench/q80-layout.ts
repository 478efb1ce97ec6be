/**
 * Benchmark: does a Q8_0 weight layout repacked at load reach the GEMV target (>= 70% of the read bandwidth at
 * 4096x14336 and 14336x4096, M = 1) where the GGUF layout does not? Issue 9's open question: the Q8_0 rows GEMV
 * (gemv-q8a.wgsl.jinja, weightFormat q8_0) reads 34-byte blocks as 9 u32 words and shifts the quants of the blocks
 * that start 2 bytes into a word; its loads alone read at 73-76% of the ceiling (bench/dispatch.ts, q80ShapedReads)
 * and the GEMV at 57-66%. Two layouts of the same bytes, one kernel structure (the rows GEMV's: a workgroup of one
 * lane a block (or `sl` blocks) walks `rb` rows 4 at a time, the next 4 rows' loads out before this 4's products,
 * int8 activations and their block scales in registers, the 4 sums added over the subgroup into workgroup memory):
 *   gguf    [N, K / 32] blocks of 34 bytes (f16 scale, 32 int8), 9 words a block, quants shifted where the block
 *           starts 2 bytes into a word
 *   split   quants [N, K] int8 read as 2 vec4<u32> a block, scales [N, K / 32] f16 in a buffer of their own (one u32
 *           a lane holds its block's scale and the neighbour's)
 * Each case: weights rotate over copies past the L2, n calls back to back in one compute pass (each writes y: every
 * call waits for the last, as in a decode step), best of 5 passes; GB/s over the weight bytes (34 per 32 values in
 * both layouts) as a fraction of the streaming read measured by bench/bandwidth.ts in the same run. y of the first
 * copy is checked against a CPU reference of the same int8 products.
 *
 *   node --import tsx bench/q80-layout.ts [--shapes 4096x14336,14336x4096] [--n 32] [--out receipt.json]
 */
import { writeFileSync } from 'node:fs';
import { measureReadBandwidthDetail } from './bandwidth.ts';
import { receiptCommit } from './commit.ts';
import { f16ToF32, f32ToF16 } from '../src/formats/f16.ts';
import { readFloat32, STORAGE_USAGE, writeBuffer } from '../src/gpu/buffers.ts';
import { createDevice, describeAdapter } from '../src/gpu/device.ts';
import { Recorder } from '../src/gpu/recorder.ts';

const args = process.argv.slice(2);
const arg = (name: string, dflt: string) => (args.indexOf(`--${name}`) >= 0 ? args[args.indexOf(`--${name}`) + 1]! : dflt);
if (args.includes('--help')) {
  console.log('usage: node --import tsx bench/q80-layout.ts [--shapes 4096x14336,14336x4096] [--n 32] [--out receipt.json]');
  process.exit(0);
}
const shapes = arg('shapes', '4096x14336,14336x4096').split(',').map((s) => s.split('x').map(Number) as [number, number]);
const n = Number(arg('n', '32'));
const out = arg('out', '');

type Layout = 'gguf' | 'split';
interface Point {
  layout: Layout;
  rb: number;
  sl: number;
}

const lines = (k: number, f: (i: number) => string) => Array.from({ length: k }, (_, i) => f(i)).join('\n');

/** The rows GEMV over one layout: N rows, K columns, rb rows a workgroup, sl blocks a lane (lanes = K / 32 / sl). */
export function q80Shader(N: number, K: number, p: Point): string {
  const nb = K / 32;
  const lanes = nb / p.sl;
  const rowWords = (nb * 34) / 4;
  const batches = p.rb / 4;
  const loads = (t: number) =>
    lines(4, (c) => {
      const row = `min(r0 + ${4 * t + c}u, ${N - 1}u)`;
      return lines(p.sl, (j) =>
        p.layout === 'gguf'
          ? `  let a${t}_${c}_${j} = ${row} * ${rowWords}u + bw${j};\n` + lines(9, (k) => `  let w${t}_${c}_${j}_${k} = W[a${t}_${c}_${j} + ${k}u];`)
          : `  let a${t}_${c}_${j} = ${row} * ${K / 16}u + 2u * b${j};\n  let q${t}_${c}_${j}_0 = Q[a${t}_${c}_${j}];\n  let q${t}_${c}_${j}_1 = Q[a${t}_${c}_${j} + 1u];\n  let s${t}_${c}_${j} = S[(${row} * ${nb}u + b${j}) / 2u];`,
      );
    });
  const product = (t: number, c: number, j: number) =>
    p.layout === 'gguf'
      ? `slotGguf(${lines(9, (k) => `w${t}_${c}_${j}_${k}`).split('\n').join(', ')}, odd${j}, xa${j}, xb${j}, dx${j})`
      : `slotSplit(q${t}_${c}_${j}_0, q${t}_${c}_${j}_1, s${t}_${c}_${j}, odd${j}, xa${j}, xb${j}, dx${j})`;
  const products = (t: number) => `  {
    var acc = vec4<f32>(0.0);
${lines(4, (c) => lines(p.sl, (j) => `    acc[${c}] += ${product(t, c, j)};`))}
    let total = subgroupAdd(acc);
    if (subgroupElect()) { part[sid * ${batches}u + ${t}u] = total; }
  }`;
  return /* wgsl */ `enable subgroups;
${p.layout === 'gguf' ? '@group(0) @binding(0) var<storage, read> W: array<u32>;' : '@group(0) @binding(0) var<storage, read> Q: array<vec4<u32>>;\n@group(0) @binding(4) var<storage, read> S: array<u32>;'}
@group(0) @binding(1) var<storage, read> xq: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> dxs: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

fn slotGguf(w0: u32, w1: u32, w2: u32, w3: u32, w4: u32, w5: u32, w6: u32, w7: u32, w8: u32, odd: bool, xa: vec4<u32>, xb: vec4<u32>, dx: f32) -> f32 {
  let dd = unpack2x16float(w0);
  let d = select(dd.x, dd.y, odd);
  let s = dot4I8Packed(select((w0 >> 16u) | (w1 << 16u), w1, odd), xa.x) + dot4I8Packed(select((w1 >> 16u) | (w2 << 16u), w2, odd), xa.y) +
    dot4I8Packed(select((w2 >> 16u) | (w3 << 16u), w3, odd), xa.z) + dot4I8Packed(select((w3 >> 16u) | (w4 << 16u), w4, odd), xa.w) +
    dot4I8Packed(select((w4 >> 16u) | (w5 << 16u), w5, odd), xb.x) + dot4I8Packed(select((w5 >> 16u) | (w6 << 16u), w6, odd), xb.y) +
    dot4I8Packed(select((w6 >> 16u) | (w7 << 16u), w7, odd), xb.z) + dot4I8Packed(select((w7 >> 16u) | (w8 << 16u), w8, odd), xb.w);
  return d * dx * f32(s);
}

fn slotSplit(q0: vec4<u32>, q1: vec4<u32>, sw: u32, odd: bool, xa: vec4<u32>, xb: vec4<u32>, dx: f32) -> f32 {
  let dd = unpack2x16float(sw);
  let d = select(dd.x, dd.y, odd);
  let s = dot4I8Packed(q0.x, xa.x) + dot4I8Packed(q0.y, xa.y) + dot4I8Packed(q0.z, xa.z) + dot4I8Packed(q0.w, xa.w) +
    dot4I8Packed(q1.x, xb.x) + dot4I8Packed(q1.y, xb.y) + dot4I8Packed(q1.z, xb.z) + dot4I8Packed(q1.w, xb.w);
  return d * dx * f32(s);
}

var<workgroup> part: array<vec4<f32>, ${(lanes / 4) * batches}>; // subgroups of 4 lanes at least

@compute @workgroup_size(${lanes})
fn main(@builtin(workgroup_id) g: vec3<u32>, @builtin(local_invocation_index) li: u32, @builtin(subgroup_id) sid: u32, @builtin(num_subgroups) nsg: u32) {
  let r0 = g.x * ${p.rb}u;
${lines(p.sl, (j) => `  let b${j} = li + ${j * lanes}u;\n  let odd${j} = (b${j} & 1u) == 1u;${p.layout === 'gguf' ? `\n  let bw${j} = (17u * b${j}) >> 1u;` : ''}`)}
${loads(0)}
${lines(p.sl, (j) => `  let xa${j} = xq[2u * b${j}];\n  let xb${j} = xq[2u * b${j} + 1u];\n  let dx${j} = dxs[b${j}];`)}
${lines(batches, (t) => (t + 1 < batches ? loads(t + 1) + '\n' : '') + products(t))}
  workgroupBarrier();
  if (li < ${p.rb}u && r0 + li < ${N}u) {
    var v = 0.0;
    for (var s = 0u; s < nsg; s++) { v += part[s * ${batches}u + li / 4u][li % 4u]; }
    y[r0 + li] = v;
  }
}`;
}

/** xorshift32 stream */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>>= 0);
  };
}

const dev = await createDevice({ timestamps: true });
if (!dev.timestamps) throw new Error('bench/q80-layout.ts needs timestamp-query');
if (!dev.caps.features.has('subgroups')) throw new Error('bench/q80-layout.ts needs the subgroups feature');
const d = dev.device;
const maxLanes = dev.caps.limits.maxComputeInvocationsPerWorkgroup ?? 256;
const bw = await measureReadBandwidthDetail(dev, dev.caps.adapterInfo?.architecture === 'swiftshader' ? 2 ** 24 : 2 ** 30);
console.log(`${describeAdapter(dev.caps)}: read ceiling ${(bw.bytesPerSecond / 1e9).toFixed(0)} GB/s`);
const results: Record<string, unknown>[] = [];

for (const [N, K] of shapes) {
  const nb = K / 32;
  const size = N * nb * 34;
  const copies = Math.max(2, Math.ceil(2 ** 28 / size));
  const r = rng(N * 7919 + K);
  // the first copy's values (the others: the same bytes, rotated: what matters is that they come from memory)
  const quants = new Int8Array(N * K);
  for (let i = 0; i < quants.length; i++) quants[i] = (r() % 255) - 127;
  const scales = new Uint16Array(N * nb);
  for (let i = 0; i < scales.length; i++) scales[i] = f32ToF16(0.001 + (r() % 1000) * 1e-6);
  const gguf = new Uint8Array(size);
  for (let b = 0; b < N * nb; b++) {
    gguf[34 * b] = scales[b]! & 255;
    gguf[34 * b + 1] = scales[b]! >> 8;
    gguf.set(new Uint8Array(quants.buffer, 32 * b, 32), 34 * b + 2);
  }
  const xq = new Int8Array(K);
  for (let i = 0; i < K; i++) xq[i] = (r() % 255) - 127;
  const dx = Float32Array.from({ length: nb }, () => 0.01 + (r() % 1000) * 1e-5);
  // CPU reference: sum over blocks of d_w * d_x * (int8 dot)
  const ref = new Float64Array(N);
  for (let row = 0; row < N; row++) {
    let acc = 0;
    for (let b = 0; b < nb; b++) {
      let s = 0;
      const o = row * K + 32 * b;
      for (let i = 0; i < 32; i++) s += quants[o + i]! * xq[32 * b + i]!;
      acc += Math.fround(f16ToF32(scales[row * nb + b]!) * dx[b]!) * s;
    }
    ref[row] = acc;
  }
  const mk = (bytes: number, label: string) => d.createBuffer({ size: Math.ceil(bytes / 16) * 16, usage: STORAGE_USAGE, label });
  const ws = { gguf: [] as GPUBuffer[], q: [] as GPUBuffer[], s: [] as GPUBuffer[] };
  for (let c = 0; c < copies; c++) {
    ws.gguf.push(mk(size, `q80.gguf${c}`));
    writeBuffer(d, ws.gguf[c]!, gguf);
    ws.q.push(mk(N * K, `q80.q${c}`));
    writeBuffer(d, ws.q[c]!, quants);
    ws.s.push(mk(N * nb * 2, `q80.s${c}`));
    writeBuffer(d, ws.s[c]!, scales);
  }
  const xqBuf = mk(K, 'q80.xq');
  writeBuffer(d, xqBuf, xq);
  const dxBuf = mk(nb * 4, 'q80.dx');
  writeBuffer(d, dxBuf, dx);
  const yBuf = mk(N * 4, 'q80.y');
  const points: Point[] = [];
  for (const layout of ['gguf', 'split'] as Layout[]) for (const [rb, sl] of [[16, 1], [16, 2], [8, 1], [32, 1], [32, 2]] as const) if (nb % sl === 0 && (nb / sl) % 32 === 0 && nb / sl <= maxLanes) points.push({ layout, rb, sl });
  // each point twice, alternated (one pass moves a few percent from the next)
  for (const p of [...points, ...points]) {
    const layout = [
      { binding: 0, type: 'read-only-storage' as const },
      { binding: 1, type: 'read-only-storage' as const },
      { binding: 2, type: 'read-only-storage' as const },
      { binding: 3, type: 'storage' as const },
      ...(p.layout === 'split' ? [{ binding: 4, type: 'read-only-storage' as const }] : []),
    ];
    const { pipeline, layout: bgl } = await dev.pipelines.get({ code: q80Shader(N, K, p), entryPoint: 'main', layout, label: `bench.q80.${p.layout}` });
    const bg = (c: number) =>
      d.createBindGroup({
        layout: bgl,
        entries: [
          { binding: 0, resource: { buffer: p.layout === 'gguf' ? ws.gguf[c]! : ws.q[c]! } },
          { binding: 1, resource: { buffer: xqBuf } },
          { binding: 2, resource: { buffer: dxBuf } },
          { binding: 3, resource: { buffer: yBuf } },
          ...(p.layout === 'split' ? [{ binding: 4, resource: { buffer: ws.s[c]! } }] : []),
        ],
      });
    const bgs = Array.from({ length: copies }, (_, c) => bg(c));
    const wgs: [number, number, number] = [Math.ceil(N / p.rb), 1, 1];
    // correctness first (copy 0)
    {
      const rec = new Recorder(dev, { timestamps: false });
      rec.dispatch({ label: 'bench.q80.check', pipeline, bindGroup: bgs[0]!, workgroups: wgs });
      await rec.submit({ wait: true });
    }
    const y = await readFloat32(d, yBuf, N);
    // largest difference over the largest reference value (a sum of K products: values near 0 are cancellations)
    let worst = 0;
    let top = 0;
    for (let i = 0; i < N; i++) {
      worst = Math.max(worst, Math.abs(y[i]! - ref[i]!));
      top = Math.max(top, Math.abs(ref[i]!));
    }
    worst /= top;
    let best = Infinity;
    for (let rep = 0; rep < 6; rep++) {
      const rec = new Recorder(dev, { timestamps: 'span' });
      for (let i = 0; i < n; i++) rec.dispatch({ label: 'bench.q80', pipeline, bindGroup: bgs[i % copies]!, workgroups: wgs });
      const [t] = await rec.submit();
      if (rep > 0) best = Math.min(best, t!.ms);
    }
    const us = (best / n) * 1000;
    const frac = size / (us * 1e-6) / bw.bytesPerSecond;
    const e = { N, K, ...p, lanes: nb / p.sl, us: Math.round(us * 100) / 100, GBs: Math.round(size / (us * 1e-6) / 1e9), fractionOfReadBandwidth: Math.round(frac * 1000) / 1000, worstRelError: worst };
    results.push(e);
    console.log(`${N}x${K} ${p.layout} rb ${p.rb} sl ${p.sl}: ${e.us} us, ${e.GBs} GB/s, ${(frac * 100).toFixed(1)}% of the ceiling (worst rel. error ${worst.toExponential(2)})`);
    if (!(worst < 1e-3)) throw new Error(`${N}x${K} ${p.layout} rb ${p.rb} sl ${p.sl}: y differs from the CPU reference (worst relative error ${worst})`);
  }
  for (const b of [...ws.gguf, ...ws.q, ...ws.s, xqBuf, dxBuf, yBuf]) b.destroy();
}
if (out) {
  writeFileSync(out, JSON.stringify({ benchmark: 'q80-layout', date: new Date().toISOString(), adapter: describeAdapter(dev.caps), commit: receiptCommit(), readBandwidthBytesPerSecond: Math.round(bw.bytesPerSecond), n, method: 'see the header of bench/q80-layout.ts', results }, null, 2) + '\n');
  console.log(`wrote ${out}`);
}
