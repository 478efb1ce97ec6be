// Generated from src/kernels/templates/residual.wgsl.jinja ({"T":"f32","vec4":true,"entry":"add_vec4","wg":64,"variant":"residual.vec4"}) by scripts/gen-sources.ts; do not edit.
// residual_vec4.wgsl: scaled residual add.
//
//   output[i] = input[i] + scale * residual[i]        for i < size
//
// `input` is the residual stream (the skip path), `residual` the sublayer's output (the residual branch, as in
// "residual mapping" F(x)); scale = 1 is the plain add, and Granite's residual_multiplier is `scale`.
// `output` must not alias `input` or `residual` (WebGPU forbids a writable binding overlapping another binding).
//
// Entry point `add_vec4` (variant residual.vec4), workgroup_size(64, 1, 1).
// vec4: one invocation computes four consecutive elements (one vec4) per grid-stride step (q = gid.x,
// gid.x + num_workgroups.x * 64, ... < size / 4); the contract runs it only when size % 4 == 0.
// Dispatch: [min(ceil(size / 4 / 64), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       f32 [size]
//   2  residual  storage, read       f32 [size]
//   3  output    storage, read_write f32 [size] (written)
//
// Uniforms (the registry's `residual` base uniforms):
//   size: u32 @0, scale: f32 @4

alias act_t = f32;

struct Uniforms {
  size: u32,
  scale: f32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<vec4<act_t>>;
@group(0) @binding(2) var<storage, read> residual: array<vec4<act_t>>;
@group(0) @binding(3) var<storage, read_write> output: array<vec4<act_t>>;

const WG: u32 = 64u;

@compute @workgroup_size(64, 1, 1)
fn add_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let n = u.size / 4u;
  let scale = u.scale;
  let stride = nwg.x * WG;
  for (var i = gid.x; i < n; i += stride) {
    output[i] = vec4<act_t>(fma(vec4<f32>(scale), vec4<f32>(residual[i]), vec4<f32>(input[i])));
  }
}