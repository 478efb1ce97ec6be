// Generated from src/kernels/templates/scatter_add.wgsl.jinja ({"mode":"dense","act":"f32","w16":false,"escale":false,"wg":256,"entries":[{"name":"main","variant":"scatter_add.default","accumulate":false},{"name":"scatter_add_accumulate","variant":"scatter_add.accumulate","accumulate":true}]}) by scripts/gen-sources.ts; do not edit.
// scatter_add.wgsl: MoE output combination (dense layout).
// Generated from the one scatter_add template: every scatter_add variant shares these semantics.
//
//   K = top_k, E = num_experts, H = hidden_size, T = num_tokens; slot s = t * K + j (j < K) of token t.
//   e = indices[s]; a slot whose e >= E contributes nothing (padding slots).
//   w = weights[s]
//   row(s) = (e * T + t): input is [E, T, H] (each expert's output for every token)
//   main: output[t, h] = sum_j w * input[row(s), h].
//   scatter_add_accumulate: output[t, h] += sum_j w * input[row(s), h].
// for t < T, h < H; the sum runs over j = 0 .. K - 1 in order, in f32.
//
// Entry point `main` (variant scatter_add.default), workgroup_size(256, 1, 1).
// Entry point `scatter_add_accumulate` (variant scatter_add.accumulate), workgroup_size(256, 1, 1).
// One invocation computes one output element per grid-stride step: i = gid.x, gid.x + stride, ... < T * H with
// stride = num_workgroups.x * 256. Dispatch: [min(ceil(T * H / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms         uniform             Uniforms (below)
//   1  input            storage, read       f32 [E, T, H]
//   2  indices          storage, read       u32 [T, K]
//   3  weights          storage, read       f32 [T, K]
//   4  output           storage, read_write f32 [T, H] (written; read too by scatter_add_accumulate)
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
@group(0) @binding(2) var<storage, read> indices: array<u32>;
@group(0) @binding(3) var<storage, read> weights: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;
const WG: u32 = 256u;
// Routing weight of slot s and the input row it reads for token t, or weight 0 where the expert index is out of range.
fn slot_row(s: u32, t: u32) -> vec2<u32> {
  let e = indices[s];
  if (e >= u.num_experts) {
    return vec2<u32>(0u, 0xffffffffu);
  }
  return vec2<u32>(e * u.num_tokens + t, 0u);
}

// sum_j w * input[row(s), h] for token t.
fn combine(t: u32, h: u32) -> f32 {
  var sum = 0.0;
  for (var j = 0u; j < u.top_k; j++) {
    let s = t * u.top_k + j;
    let r = slot_row(s, t);
    if (r.y != 0u) {
      continue;
    }
    sum += weights[s] * input[r.x * u.hidden_size + h];
  }
  return sum;
}
@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let stride = nwg.x * WG;
  let total = u.num_tokens * u.hidden_size;
  for (var i = gid.x; i < total; i += stride) {
    let t = i / u.hidden_size;
    let sum = combine(t, i - t * u.hidden_size);
    output[i] = sum;
  }
}
@compute @workgroup_size(256, 1, 1)
fn scatter_add_accumulate(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let stride = nwg.x * WG;
  let total = u.num_tokens * u.hidden_size;
  for (var i = gid.x; i < total; i += stride) {
    let t = i / u.hidden_size;
    let sum = combine(t, i - t * u.hidden_size);
    output[i] = output[i] + sum;
  }
}
