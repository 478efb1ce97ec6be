// Generated from src/kernels/templates/split_qg.wgsl.jinja ({"T":"f16","variant":"split_qg.f16"}) by scripts/gen-sources.ts; do not edit.
// split_qg_f16.wgsl: de-interleave the query and the output gate of a q_proj output (attention output gate, as in
// Qwen3-Next: q_proj(x).view(tokens, heads, 2 * head_dim).chunk(2, dim=-1)).
//
// qg_interleaved is [num_tokens, num_heads, 2 * head_dim]: per head, head_dim query values then head_dim gate values.
// For t < num_tokens, h < num_heads, d < head_dim (D = head_dim, H = num_heads):
//   Q[(t*H + h)*D + d] = qg_interleaved[(t*H + h)*2D + d]
//   G[(t*H + h)*D + d] = qg_interleaved[(t*H + h)*2D + D + d]
//
// Entry point `main` (variant split_qg.f16), workgroup_size(256, 1, 1). One invocation writes one element of Q and
// the matching element of G per grid-stride step (i = gid.x, gid.x + num_workgroups.x * 256, ... < num_tokens * H * D),
// so any dispatch width covers any size. Dispatch: [min(ceil(num_tokens * H * D / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms        uniform             Uniforms (below)
//   1  qg_interleaved  storage, read       f16 [num_tokens, num_heads, 2 * head_dim]
//   2  Q               storage, read_write f16 [num_tokens, num_heads, head_dim] (written)
//   3  G               storage, read_write f16 [num_tokens, num_heads, head_dim] (written)
//
// Uniforms (the registry's `split_qg` base uniforms):
//   num_tokens: u32 @0, num_heads: u32 @4, head_dim: u32 @8, _pad: u32 @12

// f16 variant (generated from the same template as the f32 one): every buffer holds f16 (`act_t` = f16, `enable f16;`,
// needs shader-f16); a plain copy.
//
enable f16;

alias act_t = f16;

struct Uniforms {
  num_tokens: u32,
  num_heads: u32,
  head_dim: u32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> qg_interleaved: array<act_t>;
@group(0) @binding(2) var<storage, read_write> Q: array<act_t>;
@group(0) @binding(3) var<storage, read_write> G: array<act_t>;

const WG: u32 = 256u;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let D = u.head_dim;
  let total = u.num_tokens * u.num_heads * D;
  let stride = nwg.x * WG;
  for (var i = gid.x; i < total; i += stride) {
    let row = i / D;
    let d = i - row * D;
    let src = row * 2u * D + d;
    Q[i] = qg_interleaved[src];
    G[i] = qg_interleaved[src + D];
  }
}