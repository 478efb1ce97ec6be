// Generated from src/kernels/templates/scatter_add.wgsl.jinja ({"mode":"dynamic","act":"f32","w16":false,"escale":false,"wg":256,"entries":[{"name":"scatter_add_dynamic","variant":"scatter_add.dynamic","accumulate":false}]}) by scripts/gen-sources.ts; do not edit.
// scatter_add_dynamic.wgsl: MoE output combination (dynamic layout).
// Generated from the one scatter_add template: every scatter_add variant shares these semantics.
//
//   K = top_k, E = num_experts, H = hidden_size, T = num_tokens; slot s = t * K + j (j < K) of token t.
//   e = routing_indices[s]; a slot whose e >= E contributes nothing (padding slots).
//   w = routing_weights[s]
//   row(s) = token_offsets[s]: input is [R, H], the rows the experts wrote (e.g. expert-major slots
//   e * max_tokens_per_expert + slot, as moe_offsets.default builds them)
//   scatter_add_dynamic: output[t, h] = sum_j w * input[row(s), h].
// for t < T, h < H; the sum runs over j = 0 .. K - 1 in order, in f32.
//
// Entry point `scatter_add_dynamic` (variant scatter_add.dynamic), workgroup_size(256, 1, 1).
// One invocation computes one output element per grid-stride step: i = gid.x, gid.x + stride, ... < T * H with
// stride = num_workgroups.x * 256. Dispatch: [min(ceil(T * H / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms         uniform             Uniforms (below)
//   1  input            storage, read       f32 [R, H]
//   2  routing_indices  storage, read       u32 [T, K]
//   3  routing_weights  storage, read       f32 [T, K]
//   4  token_offsets    storage, read       u32 [T, K] (row of input per slot)
//   5  output           storage, read_write f32 [T, H] (written)
//
// Uniforms (the registry's `scatter_add` base uniforms, 32 bytes): num_tokens: u32 @0, hidden_size: u32 @4,
//   top_k: u32 @8, num_experts: u32 @12

struct Uniforms {
  num_tokens: u32,
  hidden_size: u32,
  top_k: u32,
  num_experts: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read> routing_indices: array<u32>;
@group(0) @binding(3) var<storage, read> routing_weights: array<f32>;
@group(0) @binding(4) var<storage, read> token_offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> output: array<f32>;
const WG: u32 = 256u;
// sum_j w * input[token_offsets[s], h] for token t (output element i = t * H + h).
fn combine(i: u32) -> f32 {
  let t = i / u.hidden_size;
  let h = i - t * u.hidden_size;
  var sum = 0.0;
  for (var j = 0u; j < u.top_k; j++) {
    let s = t * u.top_k + j;
    let e = routing_indices[s];
    if (e >= u.num_experts) {
      continue;
    }
    var w = routing_weights[s];
    let x = token_offsets[s] * u.hidden_size + h;
    sum += w * input[x];
  }
  return sum;
}
@compute @workgroup_size(256, 1, 1)
fn scatter_add_dynamic(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let stride = nwg.x * WG;
  let total = u.num_tokens * u.hidden_size;
  for (var i = gid.x; i < total; i += stride) {
    output[i] = combine(i);
  }
}
