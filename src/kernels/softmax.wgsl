// Generated from src/kernels/templates/softmax.wgsl.jinja ({"sg":false}) by scripts/gen-sources.ts; do not edit.
// softmax.wgsl: softmax over the rows of a [outer_size, inner_size] matrix, with temperature.
//
//   z[j] = input[r*n + j] / T                  (n = inner_size; T = temperature, T <= 0 is treated as 1)
//   output[r*n + j] = exp(z[j] - max(z)) / sum_j exp(z[j] - max(z))     for r < outer_size
// -inf inputs (masked positions) get probability 0; a row whose inputs are all -inf is written as zeros.
// The max and the sum are computed online in one pass ((max, sum) pairs merged by rescaling), then a second
// pass writes the probabilities.
//
// Entry points (both workgroup_size(256, 1, 1)):
//   main           (softmax.default)  one workgroup per row: invocation i handles j = i, i + 256, ...; the
//                                     (max, sum) pairs are merged by a tree in workgroup memory.
//                                     Row r = workgroup_id.x + workgroup_id.y * num_workgroups.x.
//                                     Dispatch: [min(outer_size, 65535), ceil(outer_size / 65535), 1].
//   softmax_small  (softmax.small)    one invocation per row (no workgroup memory, no barriers), rows
//                                     grid-strided (r = gid.x, gid.x + num_workgroups.x * 256, ...): for short
//                                     rows (router logits over experts, short attention rows) and many of them.
//                                     Dispatch: [min(ceil(outer_size / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       f32 [outer_size, inner_size]
//   2  output    storage, read_write f32 [outer_size, inner_size] (written)
//
// Uniforms (the registry's `softmax` base uniforms):
//   inner_size: u32 @0, outer_size: u32 @4, temperature: f32 @8, _pad: u32 @12

struct Uniforms {
  inner_size: u32,
  outer_size: u32,
  temperature: f32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read_write> output: array<f32>;

const WG: u32 = 256u;
const NEG_BIG: f32 = -0x1.fffffep+127f; // running max before any element (-FLT_MAX; -inf is not a WGSL constant)

var<workgroup> red_m: array<f32, 256>;
var<workgroup> red_s: array<f32, 256>;

fn inv_temperature() -> f32 {
  let t = u.temperature;
  return select(1.0, 1.0 / t, t > 0.0);
}

// Merge two (max, sum) pairs: sum is relative to its max.
fn merge(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let m = max(a.x, b.x);
  return vec2<f32>(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

// Add z to a running (max, sum) pair with one exp.
fn push(acc: vec2<f32>, z: f32) -> vec2<f32> {
  if (z > acc.x) {
    return vec2<f32>(z, fma(acc.y, exp(acc.x - z), 1.0));
  }
  return vec2<f32>(acc.x, acc.y + exp(z - acc.x));
}

fn write_row(base: u32, n: u32, first: u32, step: u32, it: f32, ms: vec2<f32>) {
  let inv_sum = select(0.0, 1.0 / ms.y, ms.y > 0.0);
  for (var j = first; j < n; j += step) {
    output[base + j] = exp(input[base + j] * it - ms.x) * inv_sum;
  }
}

@compute @workgroup_size(256, 1, 1)
fn main(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
) {
  let r = wid.x + wid.y * nwg.x;
  if (r >= u.outer_size) {
    return;
  }
  let n = u.inner_size;
  let base = r * n;
  let it = inv_temperature();
  // One running (max, sum) pair per invocation. (Four interleaved chains per invocation measured 2.5-3x slower
  // on an H200; a single vocab-sized row is one workgroup's work: 128256 floats in ~225 us there.)
  var acc = vec2<f32>(NEG_BIG, 0.0);
  for (var j = li; j < n; j += WG) {
    acc = push(acc, input[base + j] * it);
  }
  red_m[li] = acc.x;
  red_s[li] = acc.y;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) {
      let m = merge(vec2<f32>(red_m[li], red_s[li]), vec2<f32>(red_m[li + s], red_s[li + s]));
      red_m[li] = m.x;
      red_s[li] = m.y;
    }
    workgroupBarrier();
  }
  write_row(base, n, li, WG, it, vec2<f32>(red_m[0], red_s[0]));
}

@compute @workgroup_size(256, 1, 1)
fn softmax_small(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let n = u.inner_size;
  let it = inv_temperature();
  for (var r = gid.x; r < u.outer_size; r += nwg.x * WG) {
    let base = r * n;
    var acc = vec2<f32>(NEG_BIG, 0.0);
    for (var j = 0u; j < n; j++) {
      acc = push(acc, input[base + j] * it);
    }
    write_row(base, n, 0u, 1u, it, acc);
  }
}

