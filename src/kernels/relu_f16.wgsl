// Generated from src/kernels/templates/relu.wgsl.jinja ({"T":"f16","variant":"relu.default_f16"}) by scripts/gen-sources.ts; do not edit.
// relu_f16.wgsl: ReLU, elementwise.
//
//   output[i] = max(input[i], 0)        for i < size
//
// Entry point `main` (variant relu.default_f16), workgroup_size(256, 1, 1). One invocation computes one element per
// grid-stride step (i = gid.x, gid.x + num_workgroups.x * 256, ...), so any dispatch width covers any size.
// Dispatch: [min(ceil(size / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       f16 [size]
//   2  output    storage, read_write f16 [size] (written; may not alias input)
//
// Uniforms (the registry's `relu` base uniforms):
//   size: u32 @0, _pad0: u32 @4, _pad1: u32 @8, _pad2: u32 @12

// f16 variant (generated from the same template as the f32 one): input and output hold f16 (`act_t` = f16, `enable
// f16;`, needs shader-f16); max(x, 0) of an f16 value is exact.
//
enable f16;

alias act_t = f16;

struct Uniforms {
  size: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<act_t>;
@group(0) @binding(2) var<storage, read_write> output: array<act_t>;

const WG: u32 = 256u;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let stride = nwg.x * WG;
  for (var i = gid.x; i < u.size; i += stride) {
    output[i] = act_t(max(f32(input[i]), 0.0));
  }
}