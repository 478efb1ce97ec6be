// cast_f32_to_f16.wgsl: convert f32 elements to f16.
//
//   output[i] = f16(input[i])      for i < size      (input f32 [size], output f16 [size])
//
// `output` is written as u32 words holding two f16 each (element i is the low half of word i/2 when i is even, the
// high half when odd), packed with pack2x16float; no f16 arithmetic or `enable f16` is needed (the registry still
// lists shader-f16 for this variant). Rounding is pack2x16float's (WGSL allows either neighbour of an inexact value;
// GPUs round to nearest even). Finite inputs only: values beyond +-65504 saturate to +-65504 (WGSL leaves
// out-of-range conversions indeterminate, so they are clamped first). When size is odd the high half of the last
// word (the 2 bytes after the output) is preserved.
//
// Entry point `main` (variant cast.f32_to_f16), workgroup_size(256, 1, 1).
// One invocation writes one word (two elements) per grid-stride step: words w = gid.x, gid.x + stride, ... with
// stride = num_workgroups.x * 256. Every word is written by exactly one invocation.
// Dispatch: [min(ceil(ceil(size / 2) / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       f32 [size]
//   2  output    storage, read_write f16 [size] as u32 words (ceil(size / 2) words; written)
//
// Uniforms (the registry's `cast` base uniforms):
//   size: u32 @0

struct Uniforms {
  size: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read_write> output: array<u32>;

const WG: u32 = 256u;
const F16_MAX: f32 = 65504.0;

fn to_f16_bits(v: vec2<f32>) -> u32 {
  return pack2x16float(clamp(v, vec2<f32>(-F16_MAX), vec2<f32>(F16_MAX)));
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let n = u.size;
  let words = (n + 1u) / 2u;
  let stride = nwg.x * WG;
  for (var w = gid.x; w < words; w += stride) {
    let i = 2u * w;
    if (i + 1u < n) {
      output[w] = to_f16_bits(vec2<f32>(input[i], input[i + 1u]));
    } else {
      output[w] = (to_f16_bits(vec2<f32>(input[i], 0.0)) & 0xffffu) | (output[w] & 0xffff0000u);
    }
  }
}
