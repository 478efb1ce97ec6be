/**
 * Benchmark: do Q8_0, Q4_K and Q6_K weights repacked at load reach the GEMV target (>= 70% of the read bandwidth at
 * 4096x14336 and 14336x4096, M = 1) where the GGUF layouts do not? Issue 9's open question: production's rows GEMVs
 * (gemv-q8a.wgsl.jinja) read Q8_0 at 57-67% of the ceiling (34-byte blocks as 9 u32 words, the quants of the blocks
 * that start 2 bytes into a word shifted; the loads alone 73-76%, bench/dispatch.ts q80ShapedReads), Q4_K at 46-52%
 * (a slot's nibble vec4 and its block's header vec4; the loads alone 57% at 4096x14336, 67% without the headers) and
 * Q6_K at 39-46% (13 words of a 210-byte block a slot of 32 values).
 * One kernel structure (the rows GEMV's: a workgroup of one lane a slot of 32 values (or `sl` slots) walks `rb` rows
 * 4 at a time, the next 4 rows' loads out before this 4's products, int8 activations, their scales and run sums in
 * registers, the 4 sums added over the subgroup into workgroup memory) over these layouts of the same bytes:
 *   q8_0 gguf    [N, K / 32] blocks of 34 bytes (f16 scale, 32 int8), 9 words a block, quants shifted where the
 *                block starts 2 bytes into a word
 *   q8_0 split   quants [N, K] int8 read as 2 vec4<u32> a block, scales [N, K / 32] f16 in a buffer of their own (one
 *                u32 a lane holds its block's scale and the neighbour's)
 *   q4_k gguf    [N, K / 256] blocks of 9 vec4<u32> (d, dmin and the 12 scale bytes; 8 vec4 of nibbles): a slot is
 *                one nibble vec4 (two runs of 16 values) and its block's header vec4, as the production rows GEMV reads
 *   q4_k split   the headers [N, K / 256] vec4 and the nibbles [N, K / 32] vec4 in planes of their own (a warp's
 *                nibble loads one contiguous 512 bytes, its header loads one 64)
 *   q6_k gguf    [N, K / 256] blocks of 210 bytes, a slot (production's: a 16-byte ql run, whose low and high nibbles
 *                are two groups of 16 values, and the 16-byte qh run they share) as 13 u32 words (5 + 5, two scale
 *                words, d), the runs shifted in odd blocks (2 bytes into a word); rows of an even count of blocks
 *   q6_k split   a slot's 32 low nibbles as one vec4<u32> (word k: values 4k .. 4k + 3 in the low nibbles, 16 + 4k ..
 *                in the high), their high 2 bits as one vec2<u32> (word h, byte j: values 16 h + j, + 4, + 8, + 12 at
 *                bits 0, 2, 4, 6), the 16 int8 scales of a block as [N, K / 16] bytes, d as [N, K / 256] f16: 4 loads
 *                a slot against the GGUF layout's 13
 * Beside each layout's GEMV points, its loads alone (rb 16, sl 1, the words XORed, no products): the layout's own
 * ceiling. Each case: weights rotate over copies past the L2, n calls back to back in one compute pass (each writes
 * y: every call waits for the last, as in a decode step), each pass queued behind ~100 ms of untimed calls (the
 * clocks up), best of 5 passes; GB/s over the weight bytes (34 per 32 values, 144 or 210 per 256, in every layout) as
 * a fraction of the streaming read measured by bench/bandwidth.ts in the same run. Before it is timed, each GEMV
 * point's y is checked against a CPU reference (the GGUF blocks dequantized by src/formats, times the activations).
 *
 *   node --import tsx bench/gemv-layout.ts [--formats q8_0,q6_k,q4_k] [--shapes 4096x14336,14336x4096] [--n 32] [--out receipt.json]
 */
import { writeFileSync } from 'node:fs';
import { measureReadBandwidthDetail } from './bandwidth.ts';
import { receiptHeader } from './commit.ts';
import { heatGpu, lines, type RecordCalls, spanMsPerCall } from './gpu-bench.ts';
import { f16ToF32, f32ToF16 } from '../src/formats/f16.ts';
import { dequantizeQ4_K } from '../src/formats/quant/q4_k.ts';
import { dequantizeQ6_K } from '../src/formats/quant/q6_k.ts';
import { readFloat32, STORAGE_USAGE, writeBuffer } from '../src/gpu/buffers.ts';
import { createDevice, describeAdapter } from '../src/gpu/device.ts';
import { Recorder } from '../src/gpu/recorder.ts';
import { Rng } from '../src/selftest/rng.ts';

const args = process.argv.slice(2);
const arg = (name: string, dflt: string) => (args.indexOf(`--${name}`) >= 0 ? args[args.indexOf(`--${name}`) + 1]! : dflt);
if (args.includes('--help')) {
  console.log('usage: node --import tsx bench/gemv-layout.ts [--formats q8_0,q6_k,q4_k] [--shapes 4096x14336,14336x4096] [--n 32] [--out receipt.json]');
  process.exit(0);
}
const formats = arg('formats', 'q8_0,q6_k,q4_k').split(',') as Format[];
for (const f of formats) if (f !== 'q8_0' && f !== 'q6_k' && f !== 'q4_k') throw new Error(`--formats: q8_0, q6_k or q4_k, not ${f}`);
const shapes = arg('shapes', '4096x14336,14336x4096').split(',').map((s) => s.split('x').map(Number) as [number, number]);
for (const [N, K] of shapes) if (!(N > 0 && K % 256 === 0)) throw new Error(`--shapes: NxK with K a multiple of 256, not ${N}x${K}`);
const n = Number(arg('n', '32'));
if (!(Number.isInteger(n) && n > 0)) throw new Error(`--n: a positive integer (calls a timed pass), not ${arg('n', '')}`);
const out = arg('out', '');

type Format = 'q8_0' | 'q6_k' | 'q4_k';
type Layout = 'gguf' | 'split';
interface Point {
  format: Format;
  layout: Layout;
  rb: number;
  sl: number;
  /** the loads alone, XORed into a keep-alive (no products): what the layout's load pattern reaches by itself */
  loadsOnly?: boolean;
}


/** The weight bindings a layout reads (after xq 1, acts 2, y 3). */
function weightBindings(p: Point): [number, string][] {
  if (p.format === 'q8_0') return p.layout === 'gguf' ? [[0, 'array<u32>']] : [[0, 'array<vec4<u32>>'], [4, 'array<u32>']];
  if (p.format === 'q4_k') return p.layout === 'gguf' ? [[0, 'array<vec4<u32>>']] : [[0, 'array<vec4<u32>>'], [4, 'array<vec4<u32>>']];
  if (p.layout === 'gguf') return [[0, 'array<u32>']];
  return [
    [0, 'array<vec4<u32>>'],
    [4, 'array<vec2<u32>>'],
    [5, 'array<u32>'],
    [6, 'array<u32>'],
  ];
}
const WNAMES: Record<number, string> = { 0: 'W', 4: 'S', 5: 'SC', 6: 'D' };

/** The rows GEMV over one layout: N rows, K columns, rb rows a workgroup, sl slots of 32 values a lane. */
export function gemvShader(N: number, K: number, p: Point): string {
  const nsl = K / 32; // slots a row
  const lanes = nsl / p.sl;
  const rowWords = (nsl * 34) / 4;
  const batches = p.rb / 4;
  const row = (t: number, c: number) => `min(r0 + ${4 * t + c}u, ${N - 1}u)`;
  const loads = (t: number) =>
    lines(4, (c) =>
      lines(p.sl, (j) => {
        const v = `${t}_${c}_${j}`;
        if (p.format === 'q8_0' && p.layout === 'gguf') return `  let a${v} = ${row(t, c)} * ${rowWords}u + bw${j};\n` + lines(9, (k) => `  let w${v}_${k} = W[a${v} + ${k}u];`);
        if (p.format === 'q8_0') return `  let g${v} = ${row(t, c)} * ${nsl}u + b${j};\n  let q${v}_0 = W[2u * g${v}];\n  let q${v}_1 = W[2u * g${v} + 1u];\n  let s${v} = S[g${v} / 2u];`;
        if (p.format === 'q4_k' && p.layout === 'gguf') return `  let g${v} = (${row(t, c)} * ${nsl}u + b${j}) / 8u * 9u;\n  let h${v} = W[g${v}];\n  let q${v} = W[g${v} + 1u + t${j}];`;
        if (p.format === 'q4_k') return `  let g${v} = ${row(t, c)} * ${nsl}u + b${j};\n  let h${v} = S[g${v} / 8u];\n  let q${v} = W[g${v}];`;
        if (p.layout === 'gguf')
          return (
            `  let a${v} = ${row(t, c)} * ${(K / 256) * 210 / 4}u;\n` +
            lines(5, (k) => `  let l${v}_${k} = W[a${v} + ol${j} + ${k}u];\n  let h${v}_${k} = W[a${v} + oh${j} + ${k}u];`) +
            `\n  let c${v}_0 = W[a${v} + os${j}];\n  let c${v}_1 = W[a${v} + os${j} + 1u];\n  let d${v} = W[a${v} + od${j}];`
          );
        return `  let g${v} = ${row(t, c)} * ${nsl}u + b${j};\n  let l${v} = W[g${v}];\n  let h${v} = S[g${v}];\n  let c${v} = SC[g${v} / 2u];\n  let d${v} = D[g${v} / 16u];`;
      }),
    );
  const product = (t: number, c: number, j: number) => {
    const v = `${t}_${c}_${j}`;
    if (p.format === 'q8_0' && p.layout === 'gguf') return `slotGguf(${Array.from({ length: 9 }, (_, k) => `w${v}_${k}`).join(', ')}, odd${j}, xa${j}, xb${j}, dx${j})`;
    if (p.format === 'q8_0') return `slotSplit(q${v}_0, q${v}_1, s${v}, odd${j}, xa${j}, xb${j}, dx${j})`;
    if (p.format === 'q4_k') return `slot4(q${v}, h${v}, t${j}, xa${j}, xb${j}, dx${j}, rs${j})`;
    if (p.layout === 'gguf')
      return `slot6g(${Array.from({ length: 5 }, (_, k) => `l${v}_${k}`).join(', ')}, ${Array.from({ length: 5 }, (_, k) => `h${v}_${k}`).join(', ')}, c${v}_0, c${v}_1, d${v}, odd${j}, so${j}, pp${j}, xa${j}, xb${j}, dx${j}, rs${j})`;
    return `slot6(l${v}, h${v}, c${v}, d${v}, g${v}, xa${j}, xb${j}, dx${j}, rs${j})`;
  };
  const words = (t: number, c: number, j: number) => {
    const v = `${t}_${c}_${j}`;
    if (p.format === 'q8_0' && p.layout === 'gguf') return Array.from({ length: 9 }, (_, k) => `w${v}_${k}`).join(' ^ ');
    if (p.format === 'q8_0') return `x4(q${v}_0) ^ x4(q${v}_1) ^ s${v}`;
    if (p.format === 'q4_k') return `x4(h${v}) ^ x4(q${v})`;
    if (p.layout === 'gguf') return Array.from({ length: 5 }, (_, k) => `l${v}_${k} ^ h${v}_${k}`).join(' ^ ') + ` ^ c${v}_0 ^ c${v}_1 ^ d${v}`;
    return `x4(l${v}) ^ h${v}.x ^ h${v}.y ^ c${v} ^ d${v}`;
  };
  const products = (t: number) =>
    p.loadsOnly
      ? lines(4, (c) => lines(p.sl, (j) => `  keep ^= ${words(t, c, j)};`))
      : `  {
    var acc = vec4<f32>(0.0);
${lines(4, (c) => lines(p.sl, (j) => `    acc[${c}] += ${product(t, c, j)};`))}
    let total = subgroupAdd(acc);
    if (subgroupElect()) { part[sid * ${batches}u + ${t}u] = total; }
  }`;
  // a slot's activations: Q8_0 / Q6_K its 32 values (two vec4 of int8) and their scale; Q4_K the two runs of 16 its
  // nibbles' low and high halves meet (values 64 c + 16 hh .. and 32 on, c = t / 2, hh = t % 2 of slot t of a block)
  // and their two blocks' scales
  const actLoads = lines(p.sl, (j) =>
    p.format === 'q6_k' && p.layout === 'gguf'
      ? `  let ra${j} = 16u * bq${j} + 8u * hh${j} + 2u * pp${j} + jj${j};\n  let xa${j} = xq[ra${j}];\n  let xb${j} = xq[ra${j} + 4u];\n  let dx${j} = vec2<f32>(acts[8u * bq${j} + 4u * hh${j} + pp${j}], acts[8u * bq${j} + 4u * hh${j} + pp${j} + 2u]);`
      : p.format === 'q4_k'
      ? `  let ra${j} = (b${j} / 8u) * 16u + 4u * (t${j} / 2u) + t${j} % 2u;\n  let xa${j} = xq[ra${j}];\n  let xb${j} = xq[ra${j} + 2u];\n  let dx${j} = vec2<f32>(acts[(b${j} / 8u) * 8u + 2u * (t${j} / 2u)], acts[(b${j} / 8u) * 8u + 2u * (t${j} / 2u) + 1u]);`
      : `  let xa${j} = xq[2u * b${j}];\n  let xb${j} = xq[2u * b${j} + 1u];\n  let dx${j} = acts[b${j}];`,
  );
  return /* wgsl */ `enable subgroups;
${weightBindings(p)
  .map(([b, t]) => `@group(0) @binding(${b}) var<storage, read> ${WNAMES[b]}: ${t};`)
  .join('\n')}
@group(0) @binding(1) var<storage, read> xq: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> acts: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
fn x4(v: vec4<u32>) -> u32 {
  return v.x ^ v.y ^ v.z ^ v.w;
}
${p.format === 'q8_0' ? Q80_FNS : p.format === 'q6_k' ? Q6_FNS : SUM16 + Q4_FNS}
var<workgroup> part: array<vec4<f32>, ${(lanes / 4) * batches}>; // subgroups of 4 lanes at least

@compute @workgroup_size(${lanes})
fn main(@builtin(workgroup_id) g: vec3<u32>, @builtin(local_invocation_index) li: u32, @builtin(subgroup_id) sid: u32, @builtin(num_subgroups) nsg: u32) {
  let r0 = g.x * ${p.rb}u;
${lines(p.sl, (j) => `  let b${j} = li + ${j * lanes}u;${p.format === 'q8_0' ? `\n  let odd${j} = (b${j} & 1u) == 1u;${p.layout === 'gguf' ? `\n  let bw${j} = (17u * b${j}) >> 1u;` : ''}` : ''}${p.format === 'q4_k' ? `\n  let t${j} = b${j} % 8u;` : ''}${p.format === 'q6_k' && p.layout === 'gguf' ? Q6G_SLOT(j) : ''}`)}
${loads(0)}
${actLoads}
${p.format !== 'q8_0' ? lines(p.sl, (j) => `  let rs${j} = vec2<i32>(sum16(xa${j}), sum16(xb${j})); // the two runs' activation sums`) : ''}
${p.loadsOnly ? `  var keep = ${lines(p.sl, (j) => `x4(xa${j}) ^ x4(xb${j}) ^ bitcast<u32>(dx${j}${p.format === 'q4_k' || (p.format === 'q6_k' && p.layout === 'gguf') ? '.x' : ''})`).split('\n').join(' ^ ')};` : ''}
${lines(batches, (t) => (t + 1 < batches ? loads(t + 1) + '\n' : '') + products(t))}
${
  p.loadsOnly
    ? `  // every lane's XOR decides a store: a keep-alive the compiler cannot drop
  if (keep == 0x12345678u) { y[(r0 + li) % ${N}u] = 1.0; }
}`
    : ''
}${p.loadsOnly ? '' : `  workgroupBarrier();
  if (li < ${p.rb}u && r0 + li < ${N}u) {
    var v = 0.0;
    for (var s = 0u; s < nsg; s++) { v += part[s * ${batches}u + li / 4u][li % 4u]; }
    y[r0 + li] = v;
  }
}`}`;
}

const Q80_FNS = /* wgsl */ `
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
`;

const SUM16 = /* wgsl */ `
// the sum of 16 int8 values
fn sum16(x: vec4<u32>) -> i32 {
  return dot4I8Packed(x.x, 0x01010101u) + dot4I8Packed(x.y, 0x01010101u) + dot4I8Packed(x.z, 0x01010101u) + dot4I8Packed(x.w, 0x01010101u);
}
`;

const Q4_FNS = /* wgsl */ `
// byte i of a Q4_K header's 12 scale bytes (words 1 .. 3; word 0 holds d and dmin)
fn hbyte(h: vec4<u32>, i: u32) -> u32 {
  return (h[1u + i / 4u] >> (8u * (i % 4u))) & 255u;
}

// sub-block j's 6-bit scale and min
fn scaleMin(h: vec4<u32>, j: u32) -> vec2<f32> {
  if (j < 4u) {
    return vec2<f32>(f32(hbyte(h, j) & 63u), f32(hbyte(h, j + 4u) & 63u));
  }
  return vec2<f32>(f32((hbyte(h, j + 4u) & 15u) | ((hbyte(h, j - 4u) >> 6u) << 4u)), f32((hbyte(h, j + 4u) >> 4u) | ((hbyte(h, j) >> 6u) << 4u)));
}

// slot t of a block (16 nibble bytes q: the low nibbles values 64 c + 16 hh + i of sub-block 2c, the high ones 32 on
// of sub-block 2c + 1) against its two runs of activations (scales dx, sums rs)
fn slot4(q: vec4<u32>, h: vec4<u32>, t: u32, xa: vec4<u32>, xb: vec4<u32>, dx: vec2<f32>, rs: vec2<i32>) -> f32 {
  let m = 0x0F0F0F0Fu;
  let il = dot4I8Packed(q.x & m, xa.x) + dot4I8Packed(q.y & m, xa.y) + dot4I8Packed(q.z & m, xa.z) + dot4I8Packed(q.w & m, xa.w);
  let ih = dot4I8Packed((q.x >> 4u) & m, xb.x) + dot4I8Packed((q.y >> 4u) & m, xb.y) + dot4I8Packed((q.z >> 4u) & m, xb.z) + dot4I8Packed((q.w >> 4u) & m, xb.w);
  let dd = unpack2x16float(h.x);
  let c = t / 2u;
  let a = scaleMin(h, 2u * c);
  let b = scaleMin(h, 2u * c + 1u);
  return dx.x * (dd.x * a.x * f32(il) - dd.y * a.y * f32(rs.x)) + dx.y * (dd.x * b.x * f32(ih) - dd.y * b.y * f32(rs.y));
}
`;

// the GGUF Q6_K slot s of a row as production's rows GEMV takes it: block bq, half hh, ql run pp (groups pp and pp + 2),
// run half jj; word offsets in the row of its ql and qh runs (16 bytes each, 2 bytes into a word in odd blocks), of the
// words holding its two scales (bytes scb and scb + 4) and d
const Q6G_SLOT = (j: number) => `
  let bq${j} = b${j} / 8u;
  let hh${j} = (b${j} / 4u) % 2u;
  let pp${j} = (b${j} / 2u) % 2u;
  let jj${j} = b${j} % 2u;
  let bb${j} = 210u * bq${j};
  let odd${j} = (bq${j} & 1u) == 1u;
  let ol${j} = (bb${j} + 64u * hh${j} + 32u * pp${j} + 16u * jj${j}) >> 2u;
  let oh${j} = (bb${j} + 128u + 32u * hh${j} + 16u * jj${j}) >> 2u;
  let scb${j} = bb${j} + 192u + 8u * hh${j} + 2u * pp${j} + jj${j};
  let os${j} = scb${j} >> 2u;
  let so${j} = scb${j} & 3u;
  let od${j} = (bb${j} + 208u) >> 2u;`;

const Q6_FNS = /* wgsl */ `${SUM16}
// word k of a 16-byte run that starts 2 bytes into word w0 when odd
fn runWord(w0: u32, w1: u32, odd: bool) -> u32 {
  return select(w0, (w0 >> 16u) | (w1 << 16u), odd);
}

// a GGUF slot: ql run l (the low nibbles group pp, the high ones group pp + 2), qh run h (bits 2 pp and 2 pp + 4), its
// scales at byte so of words c0 and c1, d in word dw, against its two runs of activations (scales dx, sums rs)
fn slot6g(l0: u32, l1: u32, l2: u32, l3: u32, l4: u32, h0: u32, h1: u32, h2: u32, h3: u32, h4: u32, c0: u32, c1: u32, dw: u32, odd: bool, so: u32, pp: u32, xa: vec4<u32>, xb: vec4<u32>, dx: vec2<f32>, rs: vec2<i32>) -> f32 {
  let l = vec4<u32>(runWord(l0, l1, odd), runWord(l1, l2, odd), runWord(l2, l3, odd), runWord(l3, l4, odd));
  let h = vec4<u32>(runWord(h0, h1, odd), runWord(h1, h2, odd), runWord(h2, h3, odd), runWord(h3, h4, odd));
  let m = 0x0F0F0F0Fu;
  let k = 0x03030303u;
  let sa = 2u * pp;
  let sb = 2u * pp + 4u;
  let ia = dot4I8Packed((l.x & m) | (((h.x >> sa) & k) << 4u), xa.x) + dot4I8Packed((l.y & m) | (((h.y >> sa) & k) << 4u), xa.y) +
    dot4I8Packed((l.z & m) | (((h.z >> sa) & k) << 4u), xa.z) + dot4I8Packed((l.w & m) | (((h.w >> sa) & k) << 4u), xa.w);
  let ib = dot4I8Packed(((l.x >> 4u) & m) | (((h.x >> sb) & k) << 4u), xb.x) + dot4I8Packed(((l.y >> 4u) & m) | (((h.y >> sb) & k) << 4u), xb.y) +
    dot4I8Packed(((l.z >> 4u) & m) | (((h.z >> sb) & k) << 4u), xb.z) + dot4I8Packed(((l.w >> 4u) & m) | (((h.w >> sb) & k) << 4u), xb.w);
  let scA = i32(c0 << (24u - 8u * so)) >> 24u;
  let scB = i32(c1 << (24u - 8u * so)) >> 24u;
  let dd = unpack2x16float(dw);
  let d = select(dd.x, dd.y, odd);
  return d * (dx.x * f32(scA * (ia - 32 * rs.x)) + dx.y * f32(scB * (ib - 32 * rs.y)));
}
// split slot g's 32 values (6-bit, 0 .. 63, minus 32) against its two runs of 16 activations: lows l, highs h, the
// block's scales word c (the slot's two int8 scales at byte 2 (g % 2)), d word (half (g / 8) % 2), activation scale
// dx, run sums rs (g: the slot's index in the whole weight)
fn slot6(l: vec4<u32>, h: vec2<u32>, c: u32, dw: u32, g: u32, xa: vec4<u32>, xb: vec4<u32>, dx: f32, rs: vec2<i32>) -> f32 {
  let m = 0x0F0F0F0Fu;
  let k = 0x03030303u;
  let ia = dot4I8Packed((l.x & m) | ((h.x & k) << 4u), xa.x) + dot4I8Packed((l.y & m) | (((h.x >> 2u) & k) << 4u), xa.y) +
    dot4I8Packed((l.z & m) | (((h.x >> 4u) & k) << 4u), xa.z) + dot4I8Packed((l.w & m) | (((h.x >> 6u) & k) << 4u), xa.w);
  let ib = dot4I8Packed(((l.x >> 4u) & m) | ((h.y & k) << 4u), xb.x) + dot4I8Packed(((l.y >> 4u) & m) | (((h.y >> 2u) & k) << 4u), xb.y) +
    dot4I8Packed(((l.z >> 4u) & m) | (((h.y >> 4u) & k) << 4u), xb.z) + dot4I8Packed(((l.w >> 4u) & m) | (((h.y >> 6u) & k) << 4u), xb.w);
  let sc = c >> (16u * (g & 1u));
  let sa = (i32(sc << 24u) >> 24u);
  let sb = (i32(sc << 16u) >> 24u);
  let dd = unpack2x16float(dw);
  let d = select(dd.x, dd.y, ((g / 8u) & 1u) == 1u);
  return d * dx * f32(sa * (ia - 32 * rs.x) + sb * (ib - 32 * rs.y));
}
`;

/** Q6_K GGUF blocks (rows of K / 256) repacked into the split planes the q6_k split kernel reads. */
function splitQ6K(gguf: Uint8Array, N: number, K: number) {
  const nblk = (N * K) / 256;
  const lows = new Uint8Array((N * K) / 2);
  const highs = new Uint8Array((N * K) / 4);
  const scales = new Uint8Array((N * K) / 16);
  const d = new Uint16Array(nblk);
  const q = new Uint8Array(256);
  for (let bi = 0; bi < nblk; bi++) {
    const o = bi * 210;
    // the block's 256 6-bit values, unsigned (0 .. 63), in value order (the GGUF dequantization's order)
    for (let h = 0; h < 2; h++)
      for (let l = 0; l < 32; l++) {
        const ql = gguf[o + 64 * h + l]!;
        const ql2 = gguf[o + 64 * h + l + 32]!;
        const hb = gguf[o + 128 + 32 * h + l]!;
        q[128 * h + l] = (ql & 15) | ((hb & 3) << 4);
        q[128 * h + l + 32] = (ql2 & 15) | (((hb >> 2) & 3) << 4);
        q[128 * h + l + 64] = (ql >> 4) | (((hb >> 4) & 3) << 4);
        q[128 * h + l + 96] = (ql2 >> 4) | (((hb >> 6) & 3) << 4);
      }
    for (let t = 0; t < 8; t++) {
      const sl = bi * 8 + t; // global slot
      const v = (i: number) => q[32 * t + i]!;
      for (let i = 0; i < 16; i++) lows[16 * sl + i] = (v(i) & 15) | ((v(16 + i) & 15) << 4);
      for (let w = 0; w < 2; w++)
        for (let j = 0; j < 4; j++) {
          let byte = 0;
          for (let k = 0; k < 4; k++) byte |= (v(16 * w + 4 * k + j) >> 4) << (2 * k);
          highs[8 * sl + 4 * w + j] = byte;
        }
    }
    scales.set(gguf.subarray(o + 192, o + 208), 16 * bi);
    d[bi] = gguf[o + 208]! | (gguf[o + 209]! << 8);
  }
  return { lows, highs, scales, d };
}

const dev = await createDevice({ timestamps: true });
if (!dev.timestamps) throw new Error('bench/gemv-layout.ts needs timestamp-query');
if (!dev.caps.features.has('subgroups')) throw new Error('bench/gemv-layout.ts needs the subgroups feature');
const d = dev.device;
const maxLanes = dev.caps.limits.maxComputeInvocationsPerWorkgroup ?? 256;
const bw = await measureReadBandwidthDetail(dev, dev.caps.adapterInfo?.architecture === 'swiftshader' ? 2 ** 24 : 2 ** 30);
console.log(`${describeAdapter(dev.caps)}: read ceiling ${(bw.bytesPerSecond / 1e9).toFixed(0)} GB/s`);
const results: Record<string, unknown>[] = [];
const mk = (bytes: number, label: string) => d.createBuffer({ size: Math.ceil(bytes / 16) * 16, usage: STORAGE_USAGE, label });

for (const format of formats)
  for (const [N, K] of shapes) {
    const nsl = K / 32;
    const size = format === 'q8_0' ? N * nsl * 34 : ((N * K) / 256) * (format === 'q6_k' ? 210 : 144);
    const copies = Math.max(2, Math.ceil(2 ** 28 / size));
    const r = new Rng(`gemv-layout/${format}/${N}x${K}`);
    const xq = new Int8Array(K);
    for (let i = 0; i < K; i++) xq[i] = r.int(255) - 127;
    const dx = Float32Array.from({ length: nsl }, () => 0.01 + r.int(1000) * 1e-5);
    // the weights' planes a layout binds, and the dequantized weights for the reference
    const planes: Record<Layout, Record<number, Uint8Array>> = { gguf: {}, split: {} };
    let wRow: (row: number) => Float32Array;
    if (format === 'q8_0') {
      const quants = new Int8Array(N * K);
      for (let i = 0; i < quants.length; i++) quants[i] = r.int(255) - 127;
      const scales = new Uint16Array(N * nsl);
      for (let i = 0; i < scales.length; i++) scales[i] = f32ToF16(0.001 + r.int(1000) * 1e-6);
      const gguf = new Uint8Array(size);
      for (let b = 0; b < N * nsl; b++) {
        gguf[34 * b] = scales[b]! & 255;
        gguf[34 * b + 1] = scales[b]! >> 8;
        gguf.set(new Uint8Array(quants.buffer, 32 * b, 32), 34 * b + 2);
      }
      planes.gguf = { 0: gguf };
      planes.split = { 0: new Uint8Array(quants.buffer), 4: new Uint8Array(scales.buffer) };
      wRow = (row) => Float32Array.from({ length: K }, (_, i) => f16ToF32(scales[row * nsl + (i >> 5)]!) * quants[row * K + i]!);
    } else if (format === 'q4_k') {
      const gguf = new Uint8Array(size);
      for (let i = 0; i < size; i++) gguf[i] = r.int(256);
      const nblk = size / 144;
      const hdr = new Uint8Array(nblk * 16);
      const nib = new Uint8Array(nblk * 128);
      for (let bi = 0; bi < nblk; bi++) {
        const o = bi * 144;
        for (const at of [0, 2]) {
          const h = f32ToF16(0.001 + r.int(1000) * 1e-6);
          gguf[o + at] = h & 255;
          gguf[o + at + 1] = h >> 8;
        }
        hdr.set(gguf.subarray(o, o + 16), 16 * bi);
        nib.set(gguf.subarray(o + 16, o + 144), 128 * bi);
      }
      planes.gguf = { 0: gguf };
      planes.split = { 0: nib, 4: hdr };
      wRow = (row) => dequantizeQ4_K(gguf.subarray((row * K * 144) / 256, ((row + 1) * K * 144) / 256), K);
    } else {
      const gguf = new Uint8Array(size);
      for (let i = 0; i < size; i++) gguf[i] = r.int(256);
      for (let bi = 0; bi < size / 210; bi++) {
        const h = f32ToF16(0.001 + r.int(1000) * 1e-6);
        gguf[bi * 210 + 208] = h & 255;
        gguf[bi * 210 + 209] = h >> 8;
      }
      const sp = splitQ6K(gguf, N, K);
      planes.gguf = { 0: gguf };
      planes.split = { 0: sp.lows, 4: sp.highs, 5: sp.scales, 6: new Uint8Array(sp.d.buffer) };
      wRow = (row) => dequantizeQ6_K(gguf.subarray((row * K * 210) / 256, ((row + 1) * K * 210) / 256), K);
    }
    const ref = new Float64Array(N);
    for (let row = 0; row < N; row++) {
      const w = wRow(row);
      let acc = 0;
      for (let i = 0; i < K; i++) acc += w[i]! * xq[i]! * dx[i >> 5]!;
      ref[row] = acc;
    }
    // the GGUF Q6_K kernel takes rows of whole words (an even count of 210-byte blocks)
    const layouts: Layout[] = format === 'q6_k' && K % 512 !== 0 ? ['split'] : ['gguf', 'split'];
    // copies of every plane (the weights come from memory: together past the L2)
    const bufs: Record<Layout, Record<number, GPUBuffer[]>> = { gguf: {}, split: {} };
    for (const l of layouts)
      for (const [b, bytes] of Object.entries(planes[l]))
        bufs[l][Number(b)] = Array.from({ length: copies }, (_, c) => {
          const buf = mk(bytes.byteLength, `gemv-layout.${format}.${l}.${b}.${c}`);
          writeBuffer(d, buf, bytes);
          return buf;
        });
    const xqBuf = mk(K, 'gemv-layout.xq');
    writeBuffer(d, xqBuf, xq);
    const dxBuf = mk(nsl * 4, 'gemv-layout.dx');
    writeBuffer(d, dxBuf, dx);
    const yBuf = mk(N * 4, 'gemv-layout.y');
    const points: Point[] = [];
    for (const layout of layouts)
      for (const [rb, sl] of [
        [16, 1],
        [16, 2],
        [8, 1],
        [32, 1],
        [32, 2],
      ] as const)
        if (nsl % sl === 0 && (nsl / sl) % 32 === 0 && nsl / sl <= maxLanes) points.push({ format, layout, rb, sl });
    for (const layout of layouts) if (nsl % 32 === 0 && nsl <= maxLanes) points.push({ format, layout, rb: 16, sl: 1, loadsOnly: true });
    // each point twice, alternated (one pass moves a few percent from the next)
    for (const p of [...points, ...points]) {
      const wb = weightBindings(p).map(([b]) => b);
      const layout = [...wb.map((b) => ({ binding: b, type: 'read-only-storage' as const })), { binding: 1, type: 'read-only-storage' as const }, { binding: 2, type: 'read-only-storage' as const }, { binding: 3, type: 'storage' as const }].sort((a, b) => a.binding - b.binding);
      const { pipeline, layout: bgl } = await dev.pipelines.get({ code: gemvShader(N, K, p), entryPoint: 'main', layout, label: `bench.gemv-layout.${format}.${p.layout}` });
      const bgs = Array.from({ length: copies }, (_, c) =>
        d.createBindGroup({
          layout: bgl,
          entries: [...wb.map((b) => ({ binding: b, resource: { buffer: bufs[p.layout][b]![c]! } })), { binding: 1, resource: { buffer: xqBuf } }, { binding: 2, resource: { buffer: dxBuf } }, { binding: 3, resource: { buffer: yBuf } }],
        }),
      );
      const wgs: [number, number, number] = [Math.ceil(N / p.rb), 1, 1];
      {
        const rec = new Recorder(dev, { timestamps: false });
        rec.dispatch({ label: 'bench.gemv-layout.check', pipeline, bindGroup: bgs[0]!, workgroups: wgs });
        await rec.submit({ wait: true });
      }
      const y = p.loadsOnly ? ref.map(() => 0) : await readFloat32(d, yBuf, N);
      // largest difference over the largest reference value (a sum of K products: values near 0 are cancellations)
      let worst = 0;
      let top = 0;
      for (let i = 0; i < N; i++) {
        worst = Math.max(worst, Math.abs(y[i]! - ref[i]!));
        top = Math.max(top, Math.abs(ref[i]!));
      }
      worst = p.loadsOnly ? NaN : worst / top;
      const record: RecordCalls = async (rec, calls) => {
        for (let i = 0; i < calls; i++) rec.dispatch({ label: 'bench.gemv-layout', pipeline, bindGroup: bgs[i % copies]!, workgroups: wgs });
      };
      // every timed pass right behind ~100 ms of untimed calls: the clocks up (an idle H200's SM clock is 345 MHz)
      const hot = dev.caps.adapterInfo.architecture !== 'swiftshader';
      let best = Infinity;
      for (let rep = 0; rep < 6; rep++) {
        if (hot) await heatGpu(dev, record, Math.min(20000, Math.ceil(100 / (Number.isFinite(best) ? best / n : 0.05))));
        const ms = (await spanMsPerCall(dev, record, n)) * n;
        if (rep > 0 || !hot) best = Math.min(best, ms);
      }
      const us = (best / n) * 1000;
      const frac = size / (us * 1e-6) / bw.bytesPerSecond;
      const e = { ...p, N, K, lanes: nsl / p.sl, us: Math.round(us * 100) / 100, GBs: Math.round(size / (us * 1e-6) / 1e9), fractionOfReadBandwidth: Math.round(frac * 1000) / 1000, worstRelError: worst };
      results.push(e);
      console.log(`${format} ${N}x${K} ${p.layout}${p.loadsOnly ? ' loads only' : ''} rb ${p.rb} sl ${p.sl}: ${e.us} us, ${e.GBs} GB/s, ${(frac * 100).toFixed(1)}% of the ceiling${p.loadsOnly ? '' : ` (worst rel. error ${worst.toExponential(2)})`}`);
      if (!p.loadsOnly && !(worst < 1e-3)) throw new Error(`${format} ${N}x${K} ${p.layout} rb ${p.rb} sl ${p.sl}: y differs from the CPU reference (worst relative error ${worst})`);
    }
    for (const l of layouts) for (const bs of Object.values(bufs[l])) for (const b of bs) b.destroy();
    for (const b of [xqBuf, dxBuf, yBuf]) b.destroy();
  }
if (out) {
  writeFileSync(out, JSON.stringify({ ...receiptHeader('gemv-layout', dev), readBandwidthBytesPerSecond: Math.round(bw.bytesPerSecond), n, method: 'see the header of bench/gemv-layout.ts', results }, null, 2) + '\n');
  console.log(`wrote ${out}`);
}
