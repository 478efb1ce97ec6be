// Generated from src/kernels/templates/moe_offsets.wgsl.jinja ({"variant":"moe_offsets.default","entry":"build_offsets","wg":256}) by scripts/gen-sources.ts; do not edit.
// moe_offsets.wgsl: routing slot -> expert output row, for the dynamic MoE scatter (scatter_add.dynamic*).
//
//   M = max_tokens_per_expert. token_counts[e] is how many routing slots expert e received; token_map holds, per expert
//   e and slot i < M, the pair (t, j) = (token_map[(e * M + i) * 2], token_map[(e * M + i) * 2 + 1]): token t's j-th
//   choice went to e as its i-th row.
//   For e < num_experts, i < min(token_counts[e], M), t < num_tokens, j < top_k:
//     token_offsets[t * top_k + j] = e * M + i        (the row of expert e's [M, hidden] output block)
//   Other elements of token_offsets are not written (slots an expert dropped keep what the buffer held).
//
// Entry point `build_offsets` (variant moe_offsets.default), workgroup_size(256, 1, 1).
// One invocation handles one (expert, slot) pair per grid-stride step: p = gid.x, gid.x + stride, ... <
// num_experts * M with stride = num_workgroups.x * 256. Dispatch: [min(ceil(num_experts * M / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms       uniform             Uniforms (below)
//   1  token_counts   storage, read       u32 [num_experts]
//   2  token_map      storage, read       u32 [num_experts, M, 2]
//   3  token_offsets  storage, read_write u32 [num_tokens, top_k] (written where routed)
//
// Uniforms (the registry's `moe_offsets` base uniforms, 32 bytes): num_tokens: u32 @0, num_experts: u32 @4,
//   top_k: u32 @8, max_tokens_per_expert: u32 @12, _pad0 .. _pad3

struct Uniforms {
  num_tokens: u32,
  num_experts: u32,
  top_k: u32,
  max_tokens_per_expert: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
  _pad3: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> token_counts: array<u32>;
@group(0) @binding(2) var<storage, read> token_map: array<u32>;
@group(0) @binding(3) var<storage, read_write> token_offsets: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(256, 1, 1)
fn build_offsets(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let M = u.max_tokens_per_expert;
  let total = u.num_experts * M;
  let stride = nwg.x * WG;
  for (var p = gid.x; p < total; p += stride) {
    let e = p / M;
    let i = p - e * M;
    if (i >= token_counts[e]) {
      continue;
    }
    let t = token_map[2u * p];
    let j = token_map[2u * p + 1u];
    if (t < u.num_tokens && j < u.top_k) {
      token_offsets[t * u.top_k + j] = p;
    }
  }
}