// dequant_f32_rowwise.wgsl: Q8_0 -> f32 dequantization of a [rows, K] weight stored row by row.
//
// Q8_0 block (ggml block_q8_0): 34 bytes = f16 d (little-endian) + 32 int8 quants q[0..31]; weight i = d * q[i].
// Layout: row r is blocks_per_row consecutive blocks (block b of row r is block r * blocks_per_row + b of the
// buffer, holding columns 32b .. 32b + 31), blocks packed back to back with no padding (a block starts at byte
// 34 * block, so odd blocks are not word-aligned). blocks_per_row = ceil(K / 32); ggml tensors have K % 32 == 0,
// any K works (the tail of a row's last block is padding and is not written).
//   output[r*K + c] = d(blk) * q(blk)[c % 32]      with blk = r * blocks_per_row + c / 32,  for r < rows, c < K
// Computed in f32, as ggml's dequantize_row_q8_0 (exact: an f16 times an int8 fits an f32 mantissa).
// (The registry's description of this variant says Q4_K; Tessera defines it as Q8_0, the format its loader keeps
// for K % 32 == 0 weights. num_blocks = rows * blocks_per_row is not read.)
//
// Entry point `main` (variant dequant.f32_rowwise), workgroup_size(256, 1, 1).
// One invocation writes one output element per grid-stride step: elements e = gid.x, gid.x + stride, ...
// < rows * K (r = e / K, c = e % K), stride = num_workgroups.x * 256; consecutive invocations write consecutive
// elements. Dispatch: [min(ceil(rows * K / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms   uniform             Uniforms (below)
//   1  quantized  storage, read       Q8_0 blocks [rows * blocks_per_row] (34 bytes each) as u32 words
//   2  output     storage, read_write f32 [rows, K] (written)
//
// Uniforms (the registry's dequant.f32_rowwise uniformsOverride):
//   num_blocks: u32 @0, blocks_per_row: u32 @4, K: u32 @8, rows: u32 @12

struct Uniforms {
  num_blocks: u32,
  blocks_per_row: u32,
  K: u32,
  rows: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> quantized: array<u32>;
@group(0) @binding(2) var<storage, read_write> output: array<f32>;

const WG: u32 = 256u;
const BLOCK_BYTES: u32 = 34u;

// Weight i (< 32) of Q8_0 block blk.
fn q8_weight(blk: u32, i: u32) -> f32 {
  let o = blk * BLOCK_BYTES;                              // even: d is a whole half-word
  let d = unpack2x16float(quantized[o >> 2u] >> (8u * (o & 3u))).x;
  let a = o + 2u + i;                                     // byte of q[i]
  let q = bitcast<i32>(quantized[a >> 2u] << (24u - 8u * (a & 3u))) >> 24u; // sign-extended int8
  return d * f32(q);
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let K = u.K;
  let n = u.rows * K;
  let stride = nwg.x * WG;
  for (var e = gid.x; e < n; e += stride) {
    let r = e / K;
    let c = e - r * K;
    output[e] = q8_weight(r * u.blocks_per_row + (c >> 5u), c & 31u);
  }
}
