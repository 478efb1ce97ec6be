// Generated from src/kernels/templates/bf16_convert.wgsl.jinja ({"out_t":"f32","op":"bf16_to_f32","variant":"bf16_to_f32.default"}) by scripts/gen-sources.ts; do not edit.
// bf16_to_f32.wgsl: widen bfloat16 values to f32.
//
// `input` holds bf16 values packed two per u32 word (element 2w in the low half of word w, 2w + 1 in the high half).
//   x = bitcast<f32>(bf16_bits << 16)                                  (exact: bf16 is the top half of an f32)
//   output[i] = x                                                      for i < size
//
// Entry point `main` (variant bf16_to_f32.default), workgroup_size(256, 1, 1). One invocation converts one element per
// grid-stride step (i = gid.x, gid.x + num_workgroups.x * 256, ...), so any dispatch width covers any size.
// Dispatch: [min(ceil(size / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       u32 [ceil(size / 2)] (bf16 pairs)
//   2  output    storage, read_write f32 [size] (written)
//
// Uniforms (the registry's `bf16_to_f32` base uniforms):
//   size: u32 @0 (the registry's uniform buffer is 16 bytes)

struct Uniforms {
  size: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read_write> output: array<f32>;

const WG: u32 = 256u;

fn bf16_at(i: u32) -> f32 {
  let w = input[i >> 1u];
  return bitcast<f32>(select(w << 16u, w & 0xffff0000u, (i & 1u) == 1u));
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let stride = nwg.x * WG;
  for (var i = gid.x; i < u.size; i += stride) {
    output[i] = bf16_at(i);
  }
}