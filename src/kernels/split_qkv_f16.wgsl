// Generated from src/kernels/templates/split_qkv.wgsl.jinja ({"T":"f16","variant":"split_qkv.f16"}) by scripts/gen-sources.ts; do not edit.
// split_qkv_f16.wgsl: split the rows of a fused QKV projection into separate Q, K and V buffers.
//
// Row t < num_tokens of fused_qkv is [q (q_size) | k (k_size) | v (v_size)] (width W = q_size + k_size + v_size):
//   Q[t*q_size + j] = fused_qkv[t*W + j]                        j < q_size
//   K[t*k_size + j] = fused_qkv[t*W + q_size + j]               j < k_size
//   V[t*v_size + j] = fused_qkv[t*W + q_size + k_size + j]      j < v_size
//
// Entry point `main` (variant split_qkv.f16), workgroup_size(256, 1, 1). One invocation copies one element of the
// fused matrix per grid-stride step (i = gid.x, gid.x + num_workgroups.x * 256, ... < num_tokens * W), so any
// dispatch width covers any size. Dispatch: [min(ceil(num_tokens * W / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms   uniform             Uniforms (below)
//   1  fused_qkv  storage, read       f16 [num_tokens, W]
//   2  Q          storage, read_write f16 [num_tokens, q_size] (written)
//   3  K          storage, read_write f16 [num_tokens, k_size] (written)
//   4  V          storage, read_write f16 [num_tokens, v_size] (written)
//
// Uniforms (the registry's `split_qkv` base uniforms):
//   num_tokens: u32 @0, q_size: u32 @4, k_size: u32 @8, v_size: u32 @12

// f16 variant (generated from the same template as the f32 one): every buffer holds f16 (`act_t` = f16, `enable f16;`,
// needs shader-f16); a plain copy.
//
enable f16;

alias act_t = f16;

struct Uniforms {
  num_tokens: u32,
  q_size: u32,
  k_size: u32,
  v_size: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> fused_qkv: array<act_t>;
@group(0) @binding(2) var<storage, read_write> Q: array<act_t>;
@group(0) @binding(3) var<storage, read_write> K: array<act_t>;
@group(0) @binding(4) var<storage, read_write> V: array<act_t>;

const WG: u32 = 256u;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let W = u.q_size + u.k_size + u.v_size;
  let total = u.num_tokens * W;
  let stride = nwg.x * WG;
  for (var i = gid.x; i < total; i += stride) {
    let t = i / W;
    let j = i - t * W;
    let x = fused_qkv[i];
    if (j < u.q_size) {
      Q[t * u.q_size + j] = x;
    } else if (j < u.q_size + u.k_size) {
      K[t * u.k_size + j - u.q_size] = x;
    } else {
      V[t * u.v_size + j - u.q_size - u.k_size] = x;
    }
  }
}