// kv_cache_write_f32_to_f16.wgsl: copy f32 keys and values into an f16 KV cache at an element offset.
//
//   output_k[dst_offset + i] = f16(input_k[src_offset + i])
//   output_v[dst_offset + i] = f16(input_v[src_offset + i])          for i < count
//
// Offsets and count are in elements (e.g. dst_offset = (position * num_kv_heads) * head_dim for a cache laid out
// [max_positions, num_kv_heads, head_dim], count = tokens * num_kv_heads * head_dim). Cache elements outside
// [dst_offset, dst_offset + count) are preserved, including the other half of a boundary word when dst_offset or
// dst_offset + count is odd.
// The caches are written as u32 words holding two f16 each (element e is the low half of word e/2 when e is even,
// the high half when odd), packed with pack2x16float; no f16 arithmetic or `enable f16` is needed (the registry
// still lists shader-f16). Rounding is pack2x16float's (WGSL allows either neighbour of an inexact value; GPUs
// round to nearest even). Finite inputs only: values beyond +-65504 saturate to +-65504 (clamped first, since WGSL
// leaves out-of-range conversions indeterminate).
//
// Entry point `main` (variant kv_cache_write.f32_to_f16), workgroup_size(256, 1, 1).
// One invocation owns one cache word of output_k and the same word of output_v per grid-stride step: words
// w = dst_offset/2 + j for j = gid.x, gid.x + stride, ... < W, W = (dst_offset + count - 1)/2 - dst_offset/2 + 1
// (integer division), stride = num_workgroups.x * 256. Every word is written by exactly one invocation.
// Dispatch: any width; enough for one step: [min(ceil((count / 2 + 1) / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input_k   storage, read       f32 [src_offset + count]
//   2  input_v   storage, read       f32 [src_offset + count]
//   3  output_k  storage, read_write f16 cache as u32 words (updated in place)
//   4  output_v  storage, read_write f16 cache as u32 words (updated in place)
//
// Uniforms (the registry's `kv_cache_write` base uniforms):
//   src_offset: u32 @0, dst_offset: u32 @4, count: u32 @8, _pad0: u32 @12

struct Uniforms {
  src_offset: u32,
  dst_offset: u32,
  count: u32,
  _pad0: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input_k: array<f32>;
@group(0) @binding(2) var<storage, read> input_v: array<f32>;
@group(0) @binding(3) var<storage, read_write> output_k: array<u32>;
@group(0) @binding(4) var<storage, read_write> output_v: array<u32>;

const WG: u32 = 256u;
const F16_MAX: f32 = 65504.0;

fn to_f16_bits(v: vec2<f32>) -> u32 {
  return pack2x16float(clamp(v, vec2<f32>(-F16_MAX), vec2<f32>(F16_MAX)));
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  if (u.count == 0u) {
    return;
  }
  let d0 = u.dst_offset;
  let d1 = d0 + u.count; // end (exclusive)
  let w0 = d0 >> 1u;
  let nwords = ((d1 - 1u) >> 1u) - w0 + 1u;
  let stride = nwg.x * WG;
  for (var j = gid.x; j < nwords; j += stride) {
    let w = w0 + j;
    let e = 2u * w;
    let lo_in = e >= d0; // e < d1 holds for every word in range
    let hi_in = e + 1u < d1 && e + 1u >= d0;
    let s = u.src_offset + select(0u, e - d0, lo_in); // source of element e (of e + 1 when !lo_in)
    if (lo_in && hi_in) {
      output_k[w] = to_f16_bits(vec2<f32>(input_k[s], input_k[s + 1u]));
      output_v[w] = to_f16_bits(vec2<f32>(input_v[s], input_v[s + 1u]));
    } else if (lo_in) {
      output_k[w] = (to_f16_bits(vec2<f32>(input_k[s], 0.0)) & 0xffffu) | (output_k[w] & 0xffff0000u);
      output_v[w] = (to_f16_bits(vec2<f32>(input_v[s], 0.0)) & 0xffffu) | (output_v[w] & 0xffff0000u);
    } else {
      // Only the high half (element e + 1 = d0, source src_offset) is in range.
      output_k[w] = (to_f16_bits(vec2<f32>(0.0, input_k[s])) & 0xffff0000u) | (output_k[w] & 0xffffu);
      output_v[w] = (to_f16_bits(vec2<f32>(0.0, input_v[s])) & 0xffff0000u) | (output_v[w] & 0xffffu);
    }
  }
}
