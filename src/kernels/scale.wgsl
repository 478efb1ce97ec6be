// Generated from src/kernels/templates/scale.wgsl.jinja ({"T":"f32","v":{"main":"scale.default","inplace":"scale.inplace"}}) by scripts/gen-sources.ts; do not edit.
// scale.wgsl: multiply every element by a scalar.
//
//   main          (scale.default):  output[i] = input[i] * scale      for i < size
//   main_inplace  (scale.inplace):  output[i] = output[i] * scale     for i < size (`input` is not read; bind any
//                                                                      buffer to it, e.g. a 16-byte dummy)
//
// Both workgroup_size(256, 1, 1). One invocation computes one element per grid-stride step: elements
// i = gid.x, gid.x + stride, ... with stride = num_workgroups.x * 256, so any dispatch width covers any size.
// Dispatch: [min(ceil(size / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       f32 [size] (main only)
//   2  output    storage, read_write f32 [size] (written; read too by main_inplace)
//
// Uniforms (the registry's `scale` base uniforms):
//   size: u32 @0, scale: f32 @4

alias act_t = f32;

struct Uniforms {
  size: u32,
  scale: f32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<act_t>;
@group(0) @binding(2) var<storage, read_write> output: array<act_t>;

const WG: u32 = 256u;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let stride = nwg.x * WG;
  for (var i = gid.x; i < u.size; i += stride) {
    output[i] = act_t(f32(input[i]) * u.scale);
  }
}

@compute @workgroup_size(256, 1, 1)
fn main_inplace(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let stride = nwg.x * WG;
  for (var i = gid.x; i < u.size; i += stride) {
    output[i] = act_t(f32(output[i]) * u.scale);
  }
}