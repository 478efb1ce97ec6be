// Generated from src/kernels/templates/layernorm.wgsl.jinja ({"T":"f32","variant":"layernorm.default"}) by scripts/gen-sources.ts; do not edit.
// layernorm.wgsl: LayerNorm of rows (BERT, XLM-R and other encoders):
//   output[t, i] = (input[t, i] - mean_t) / sqrt(var_t + eps) * weight[i] + bias[i]
// with mean_t and var_t (biased, 1/H) over the hidden_size values of row t, computed in two passes (the mean, then
// the squared deviations) so rows with a large common offset keep their precision.
//
// Entry point `main` (variant layernorm.default), workgroup_size(256, 1, 1): one workgroup per row
// t = workgroup_id.x + workgroup_id.y * num_workgroups.x; invocation i takes values i, i + 256, ... of the row.
// Dispatch: [min(num_tokens, maxComputeWorkgroupsPerDimension), ceil(num_tokens / that), 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       f32 [num_tokens, hidden_size]
//   2  weight    storage, read       f32 [hidden_size]
//   3  bias      storage, read       f32 [hidden_size]
//   4  output    storage, read_write f32 [num_tokens, hidden_size] (written)
//
// Uniforms (the registry's `layernorm` base uniforms):
//   hidden_size: u32 @0, num_tokens: u32 @4, eps: f32 @8, _pad: u32 @12

alias act_t = f32;

struct Uniforms {
  hidden_size: u32,
  num_tokens: u32,
  eps: f32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<act_t>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<act_t>;

const WG: u32 = 256u;

var<workgroup> red: array<f32, WG>;

// The workgroup's sum of x (every invocation gets it).
fn total(li: u32, x: f32) -> f32 {
  red[li] = x;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) {
      red[li] += red[li + s];
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let t = wid.x + wid.y * nwg.x;
  if (t >= u.num_tokens) {
    return;
  }
  let H = u.hidden_size;
  let base = t * H;
  var s = 0.0;
  for (var i = li; i < H; i += WG) {
    s += f32(input[base + i]);
  }
  let mean = total(li, s) / f32(H);
  var ss = 0.0;
  for (var i = li; i < H; i += WG) {
    let d = f32(input[base + i]) - mean;
    ss += d * d;
  }
  let inv = inverseSqrt(total(li, ss) / f32(H) + u.eps);
  for (var i = li; i < H; i += WG) {
    output[base + i] = act_t((f32(input[base + i]) - mean) * inv * weight[i] + bias[i]);
  }
}