// Generated from src/kernels/templates/scatter_add.wgsl.jinja ({"mode":"vec4","act":"f32","w16":false,"escale":false,"wg":64,"entries":[{"name":"scatter_add_vec4","variant":"scatter_add.vec4","accumulate":false}]}) by scripts/gen-sources.ts; do not edit.
// scatter_add_vec4.wgsl: MoE output combination (vec4 layout).
// Generated from the one scatter_add template: every scatter_add variant shares these semantics.
//
//   K = top_k, E = num_experts, H = hidden_size, T = num_tokens; slot s = t * K + j (j < K) of token t.
//   e = indices[s]; a slot whose e >= E contributes nothing (padding slots).
//   w = weights[s]
//   row(s) = (e * T + t): input is [E, T, H] (each expert's output for every token)
//   scatter_add_vec4: output[t, h] = sum_j w * input[row(s), h].
// for t < T, h < H; the sum runs over j = 0 .. K - 1 in order, in f32.
// vec4: the contract runs this only where H % 4 == 0.
//
// Entry point `scatter_add_vec4` (variant scatter_add.vec4), workgroup_size(64, 1, 1).
// One invocation computes four consecutive output elements (one vec4) per grid-stride step: q = gid.x, gid.x + stride,
// ... < T * H / 4 with stride = num_workgroups.x * 64. Dispatch: [min(ceil(T * H / 4 / 64), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms         uniform             Uniforms (below)
//   1  input            storage, read       f32 [E, T, H]
//   2  indices          storage, read       u32 [T, K]
//   3  weights          storage, read       f32 [T, K]
//   4  output           storage, read_write f32 [T, H] (written)
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
@group(0) @binding(1) var<storage, read> input: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> indices: array<u32>;
@group(0) @binding(3) var<storage, read> weights: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<vec4<f32>>;
const WG: u32 = 64u;
// Routing weight of slot s and the input row it reads for token t, or weight 0 where the expert index is out of range.
fn slot_row(s: u32, t: u32) -> vec2<u32> {
  let e = indices[s];
  if (e >= u.num_experts) {
    return vec2<u32>(0u, 0xffffffffu);
  }
  return vec2<u32>(e * u.num_tokens + t, 0u);
}

// sum_j w * input[row(s), 4c .. 4c + 3] for token t, column group c.
fn combine4(t: u32, c: u32) -> vec4<f32> {
  let H4 = u.hidden_size / 4u;
  var sum = vec4<f32>(0.0);
  for (var j = 0u; j < u.top_k; j++) {
    let s = t * u.top_k + j;
    let r = slot_row(s, t);
    if (r.y != 0u) {
      continue;
    }
    sum += weights[s] * input[r.x * H4 + c];
  }
  return sum;
}
@compute @workgroup_size(64, 1, 1)
fn scatter_add_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let stride = nwg.x * WG;
  let H4 = u.hidden_size / 4u;
  let total = u.num_tokens * H4;
  for (var q = gid.x; q < total; q += stride) {
    let t = q / H4;
    output[q] = combine4(t, q - t * H4);
  }
}
