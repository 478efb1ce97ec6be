// cast_f16_to_f32.wgsl: convert f16 elements to f32.
//
//   output[i] = f32(input[i])      for i < size      (input f16 [size], output f32 [size])
//
// `input` is read as u32 words holding two f16 each (element i is the low half of word i/2 when i is even, the
// high half when odd), converted with unpack2x16float (exact: every f16 is an f32); no f16 arithmetic or
// `enable f16` is needed (the registry still lists shader-f16 for this variant).
//
// Entry point `main` (variant cast.f16_to_f32), workgroup_size(256, 1, 1).
// One invocation converts one word (two elements, output[2w] and output[2w+1] when 2w+1 < size) per grid-stride
// step: words w = gid.x, gid.x + stride, ... with stride = num_workgroups.x * 256.
// Dispatch: [min(ceil(ceil(size / 2) / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       f16 [size] as u32 words (ceil(size / 2) words)
//   2  output    storage, read_write f32 [size] (written)
//
// Uniforms (the registry's `cast` base uniforms):
//   size: u32 @0

struct Uniforms {
  size: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read_write> output: array<f32>;

const WG: u32 = 256u;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let n = u.size;
  let words = (n + 1u) / 2u;
  let stride = nwg.x * WG;
  for (var w = gid.x; w < words; w += stride) {
    let v = unpack2x16float(input[w]);
    output[2u * w] = v.x;
    if (2u * w + 1u < n) {
      output[2u * w + 1u] = v.y;
    }
  }
}
