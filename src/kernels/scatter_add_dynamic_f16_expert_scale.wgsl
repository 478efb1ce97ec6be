// Generated from src/kernels/templates/scatter_add.wgsl.jinja ({"mode":"dynamic","act":"f16","w16":false,"escale":true,"wg":256,"entries":[{"name":"scatter_add_dynamic","variant":"scatter_add.dynamic_f16_expert_scale","accumulate":false}]}) by scripts/gen-sources.ts; do not edit.
// scatter_add_dynamic_f16_expert_scale.wgsl: MoE output combination (dynamic layout, f16 expert outputs and output, per-expert output scales).
// Generated from the one scatter_add template: every scatter_add variant shares these semantics.
//
//   K = top_k, E = num_experts, H = hidden_size, T = num_tokens; slot s = t * K + j (j < K) of token t.
//   e = routing_indices[s]; a slot whose e >= E contributes nothing (padding slots).
//   w = routing_weights[s] * expert_scales[e]
//   row(s) = token_offsets[s]: input is [R, H], the rows the experts wrote (e.g. expert-major slots
//   e * max_tokens_per_expert + slot, as moe_offsets.default builds them)
//   scatter_add_dynamic: output[t, h] = sum_j w * input[row(s), h].
// for t < T, h < H; the sum runs over j = 0 .. K - 1 in order, in f32, and is rounded to f16 once (clamped to
// +-65504: WGSL leaves out-of-range conversions indeterminate).
// f16 tensors are read (and written) as u32 words holding two f16 each (element i is the low half of word i / 2 when i
// is even, the high half when odd) with unpack2x16float / pack2x16float, so no `enable f16` is needed.
//
// Entry point `scatter_add_dynamic` (variant scatter_add.dynamic_f16_expert_scale), workgroup_size(256, 1, 1).
// One invocation computes one output word (output elements 2q and 2q + 1) per grid-stride step: q = gid.x, gid.x +
// stride, ... < ceil(T * H / 2) with stride = num_workgroups.x * 256; when T * H is odd the high half of the last word
// keeps its bits. Dispatch: [min(ceil(T * H / 2 / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms         uniform             Uniforms (below)
//   1  input            storage, read       f16 [R, H] as u32 words
//   2  routing_indices  storage, read       u32 [T, K]
//   3  routing_weights  storage, read       f32 [T, K]
//   4  token_offsets    storage, read       u32 [T, K] (row of input per slot)
//   5  expert_scales    storage, read       f32 [E]
//   6  output           storage, read_write f16 [T, H] as u32 words (written)
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
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read> routing_indices: array<u32>;
@group(0) @binding(3) var<storage, read> routing_weights: array<f32>;
@group(0) @binding(4) var<storage, read> token_offsets: array<u32>;
@group(0) @binding(5) var<storage, read> expert_scales: array<f32>;
@group(0) @binding(6) var<storage, read_write> output: array<u32>;
const WG: u32 = 256u;
const F16_MAX: f32 = 65504.0;
// Element i of an f16 array held as u32 words.
fn half_at(word: u32, i: u32) -> f32 {
  let v = unpack2x16float(word);
  return select(v.x, v.y, (i & 1u) == 1u);
}

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
    w *= expert_scales[e];
    let x = token_offsets[s] * u.hidden_size + h;
    sum += w * half_at(input[x >> 1u], x);
  }
  return sum;
}
@compute @workgroup_size(256, 1, 1)
fn scatter_add_dynamic(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let stride = nwg.x * WG;
  let total = u.num_tokens * u.hidden_size;
  let words = (total + 1u) / 2u;
  for (var q = gid.x; q < words; q += stride) {
    let i = 2u * q;
    let lo = clamp(combine(i), -F16_MAX, F16_MAX);
    if (i + 1u < total) {
      let hi = clamp(combine(i + 1u), -F16_MAX, F16_MAX);
      output[q] = pack2x16float(vec2<f32>(lo, hi));
    } else {
      output[q] = (output[q] & 0xffff0000u) | (pack2x16float(vec2<f32>(lo, 0.0)) & 0xffffu);
    }
  }
}
