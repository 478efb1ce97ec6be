// dequant_f16_rowwise.wgsl: Q8_0 -> f16 dequantization of a [rows, K] weight stored row by row.
//
// Layout and values exactly as dequant_f32_rowwise.wgsl: Q8_0 blocks (34 bytes: f16 d + 32 int8 q) packed back to
// back, row r = blocks_per_row = ceil(K / 32) consecutive blocks, block b holding columns 32b .. 32b + 31;
//   output[r*K + c] = f16(d(blk) * q(blk)[c % 32])      with blk = r * blocks_per_row + c / 32,  r < rows, c < K
// d * q is exact in f32 and rounded to f16 by pack2x16float (WGSL allows either neighbour of an inexact value;
// GPUs round to nearest even); |d * q| <= 65504 * 128 can exceed the f16 range only with extreme d, and such values
// saturate to +-65504 (clamped first, since WGSL leaves out-of-range conversions indeterminate).
// `output` is written as u32 words holding two f16 each (element e is the low half of word e/2 when e is even, the
// high half when odd); rows are packed with no padding, so with K odd a word may span two rows. When rows*K is odd
// the high half of the last word (the 2 bytes after the output) is preserved. No f16 arithmetic or `enable f16` is
// needed (the registry still lists shader-f16 for this variant).
// (The registry's description of this variant says Q4_K; Tessera defines it as Q8_0, like dequant.f32_rowwise.
// num_blocks = rows * blocks_per_row is not read.)
//
// Entry point `main` (variant dequant.f16_rowwise), workgroup_size(256, 1, 1).
// One invocation writes one output word (elements 2w and 2w + 1) per grid-stride step: words w = gid.x,
// gid.x + stride, ... < ceil(rows * K / 2), stride = num_workgroups.x * 256. Every word has exactly one writer.
// Dispatch: [min(ceil(ceil(rows * K / 2) / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms   uniform             Uniforms (below)
//   1  quantized  storage, read       Q8_0 blocks [rows * blocks_per_row] (34 bytes each) as u32 words
//   2  output     storage, read_write f16 [rows, K] as u32 words (ceil(rows * K / 2) words; written)
//
// Uniforms (the registry's dequant.f16_rowwise uniformsOverride):
//   num_blocks: u32 @0, blocks_per_row: u32 @4, K: u32 @8, rows: u32 @12

struct Uniforms {
  num_blocks: u32,
  blocks_per_row: u32,
  K: u32,
  rows: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> quantized: array<u32>;
@group(0) @binding(2) var<storage, read_write> output: array<u32>;

const WG: u32 = 256u;
const BLOCK_BYTES: u32 = 34u;
const F16_MAX: f32 = 65504.0;

// Weight i (< 32) of Q8_0 block blk.
fn q8_weight(blk: u32, i: u32) -> f32 {
  let o = blk * BLOCK_BYTES;                              // even: d is a whole half-word
  let d = unpack2x16float(quantized[o >> 2u] >> (8u * (o & 3u))).x;
  let a = o + 2u + i;                                     // byte of q[i]
  let q = bitcast<i32>(quantized[a >> 2u] << (24u - 8u * (a & 3u))) >> 24u; // sign-extended int8
  return d * f32(q);
}

// Element e of the [rows, K] output, decoded.
fn element(e: u32) -> f32 {
  let r = e / u.K;
  let c = e - r * u.K;
  return q8_weight(r * u.blocks_per_row + (c >> 5u), c & 31u);
}

fn to_f16_bits(v: vec2<f32>) -> u32 {
  return pack2x16float(clamp(v, vec2<f32>(-F16_MAX), vec2<f32>(F16_MAX)));
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let n = u.rows * u.K;
  let words = (n + 1u) / 2u;
  let stride = nwg.x * WG;
  for (var w = gid.x; w < words; w += stride) {
    let e = 2u * w;
    if (e + 1u < n) {
      output[w] = to_f16_bits(vec2<f32>(element(e), element(e + 1u)));
    } else {
      output[w] = (to_f16_bits(vec2<f32>(element(e), 0.0)) & 0xffffu) | (output[w] & 0xffff0000u);
    }
  }
}
