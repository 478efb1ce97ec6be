// Generated from src/kernels/templates/glu.wgsl.jinja ({"act":"silu","T":"f16","variant":"silu.default_f16"}) by scripts/gen-sources.ts; do not edit.
// silu_f16.wgsl: SwiGLU, silu(gate) * up, with gate/up in separate buffers or fused in one.
//
//   silu(x) = x / (1 + exp(-x))
//   rowsplit_dim = 0  (separate):  output[i] = silu(gate[i]) * input[i]                    for i < size
//   rowsplit_dim = D  (fused):     input is [rows, 2*D]; for i < size, r = i / D, j = i % D:
//                                  output[i] = silu(input[r*2D + j]) * input[r*2D + D + j]
//                                  (first half of each row = gate, second half = up, as in Phi-3's
//                                   gate_up_proj `gate, up = x.chunk(2, -1)`); `gate` is not read.
// `input` is the up projection (Llama's up_proj output), `gate` the gate projection (gate_proj output);
// size = rows * intermediate_size output elements; output is packed [rows, D].
// Plain SiLU (no multiply) is not expressible with these fields: bind `input` to a buffer of ones, or add a
// registry field for it.
//
// Entry point `main` (variant silu.default_f16), workgroup_size(256, 1, 1).
// One invocation computes one output element per grid-stride step (stride num_workgroups.x * 256).
// Dispatch: [min(ceil(size / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       f16 [size] (separate) or [size / D, 2*D] (fused)
//   2  output    storage, read_write f16 [size] (written)
//   3  gate      storage, read       f16 [size] (separate; any buffer when fused, e.g. `input` itself)
//
// Uniforms (the registry's `silu` base uniforms):
//   size: u32 @0, rowsplit_dim: u32 @4

// f16 variant (generated from the same template as the f32 one): the buffers hold f16 (`act_t` = f16, `enable
// f16;`, needs shader-f16); values are widened to f32 as they are read, computed in f32 and rounded to f16 once
// as they are stored.
//
enable f16;

alias act_t = f16;

struct Uniforms {
  size: u32,
  rowsplit_dim: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<act_t>;
@group(0) @binding(2) var<storage, read_write> output: array<act_t>;
@group(0) @binding(3) var<storage, read> gate: array<act_t>;

const WG: u32 = 256u;

fn silu(x: f32) -> f32 {
  // exp(-x) overflows to +inf for x < -88: x / inf = -0, the correct limit.
  return x / (1.0 + exp(-x));
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let n = u.size;
  let D = u.rowsplit_dim;
  let stride = nwg.x * WG;
  if (D == 0u) {
    for (var i = gid.x; i < n; i += stride) {
      output[i] = act_t(silu(f32(gate[i])) * f32(input[i]));
    }
  } else {
    for (var i = gid.x; i < n; i += stride) {
      let r = i / D;
      let j = i - r * D;
      let base = 2u * r * D + j;
      output[i] = act_t(silu(f32(input[base])) * f32(input[base + D]));
    }
  }
}