// Generated from src/kernels/templates/softmax.wgsl.jinja ({"sg":true}) by scripts/gen-sources.ts; do not edit.
// softmax_subgroup.wgsl: softmax over the rows of a [outer_size, inner_size] matrix, with temperature, reduced with subgroup
// operations (needs `subgroups`; any subgroup size, any mapping of invocations to subgroups).
//
//   z[j] = input[r*n + j] / T                  (n = inner_size; T = temperature, T <= 0 is treated as 1)
//   output[r*n + j] = exp(z[j] - max(z)) / sum_j exp(z[j] - max(z))     for r < outer_size
// -inf inputs (masked positions) get probability 0; a row whose inputs are all -inf is written as zeros.
// As softmax.wgsl (same helpers, generated from the same template): the max and the sum are computed online in one
// pass ((max, sum) pairs merged by rescaling), then a second pass writes the probabilities.
//
// Entry points (both workgroup_size(256, 1, 1)):
//   main_subgroup           (softmax.subgroup)        one workgroup per row, as softmax.default: invocation i handles
//                                                     j = i, i + 256, ...; each subgroup merges its pairs with
//                                                     subgroupMax / subgroupAdd, its first lane stores the result at
//                                                     its own local index (other slots hold the empty pair), and
//                                                     after one barrier every subgroup merges the 256 slots again.
//                                                     Row r = workgroup_id.x + workgroup_id.y * num_workgroups.x.
//                                                     Dispatch: [min(outer_size, 65535), ceil(outer_size / 65535), 1].
//   softmax_small_subgroup  (softmax.small_subgroup)  one subgroup per row, for short rows and many of them:
//                                                     workgroup w takes chunks of ROWS = 8 rows (c = w, w +
//                                                     num_workgroups.x, ...); its S subgroups (counted with a
//                                                     workgroup atomic, each gets a slot k < S) take rows c*ROWS + k,
//                                                     + S, ... of the chunk; the lanes stride over the row by the
//                                                     subgroup size. No workgroup barrier per row.
//                                                     Dispatch: [min(ceil(outer_size / ROWS), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       f32 [outer_size, inner_size]
//   2  output    storage, read_write f32 [outer_size, inner_size] (written)
//
// Uniforms (the registry's `softmax` base uniforms):
//   inner_size: u32 @0, outer_size: u32 @4, temperature: f32 @8, _pad: u32 @12

enable subgroups;
// The row loops of softmax_small_subgroup depend on the subgroup's slot, which is the same on all of its lanes.
diagnostic(off, subgroup_uniformity);

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

// The (max, sum) pair of a subgroup's pairs (every lane gets it).
fn subgroup_merge(acc: vec2<f32>) -> vec2<f32> {
  let m = subgroupMax(acc.x);
  return vec2<f32>(m, subgroupAdd(acc.y * exp(acc.x - m)));
}

@compute @workgroup_size(256, 1, 1)
fn main_subgroup(
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
  var acc = vec2<f32>(NEG_BIG, 0.0);
  for (var j = li; j < n; j += WG) {
    acc = push(acc, input[base + j] * it);
  }
  let sg = subgroup_merge(acc);
  let rank = subgroupExclusiveAdd(1u);
  let lanes = subgroupAdd(1u);
  red_m[li] = select(NEG_BIG, sg.x, rank == 0u);
  red_s[li] = select(0.0, sg.y, rank == 0u);
  workgroupBarrier();
  var tot = vec2<f32>(NEG_BIG, 0.0);
  for (var i = rank; i < WG; i += lanes) {
    tot = merge(tot, vec2<f32>(red_m[i], red_s[i]));
  }
  write_row(base, n, li, WG, it, subgroup_merge(tot));
}

const ROWS: u32 = 8u; // rows per workgroup chunk (softmax_small_subgroup)

var<workgroup> sg_count: atomic<u32>;

@compute @workgroup_size(256, 1, 1)
fn softmax_small_subgroup(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(subgroup_invocation_id) lane: u32,
  @builtin(subgroup_size) sg_size: u32,
  @builtin(local_invocation_index) li: u32,
) {
  // Slot of this subgroup in the workgroup, and the number of subgroups S (the counter zeroed here, not by
  // workgroup-memory zero-initialization, which Dawn's disable_workgroup_init turns off).
  if (li == 0u) {
    atomicStore(&sg_count, 0u);
  }
  workgroupBarrier();
  var first = 0u;
  if (lane == 0u) {
    first = atomicAdd(&sg_count, 1u);
  }
  let slot = subgroupMax(first);
  workgroupBarrier();
  let S = atomicLoad(&sg_count);
  let n = u.inner_size;
  let it = inv_temperature();
  for (var c = wid.x; c * ROWS < u.outer_size; c += nwg.x) {
    for (var k = slot; k < ROWS; k += S) {
      let r = c * ROWS + k;
      if (r >= u.outer_size) {
        break;
      }
      let base = r * n;
      var acc = vec2<f32>(NEG_BIG, 0.0);
      for (var j = lane; j < n; j += sg_size) {
        acc = push(acc, input[base + j] * it);
      }
      write_row(base, n, lane, sg_size, it, subgroup_merge(acc));
    }
  }
}
