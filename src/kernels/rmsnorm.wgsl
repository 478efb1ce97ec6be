// Generated from src/kernels/templates/rmsnorm.wgsl.jinja ({"T":"f32","sg":true,"cached":true,"small_entry":"main_small","variants":{"main":"rmsnorm.default","small":"rmsnorm.small"}}) by scripts/gen-sources.ts; do not edit.
// rmsnorm.wgsl: RMS normalization of rows, with an optional fused residual add before or after the norm.
//
// For each row r < num_tokens (H = hidden_size, S = token_stride, 0 means H):
//   x[j]   = input[r*S + j]                                  has_residual = 0 or 2
//   x[j]   = input[r*S + j] + residual[r*H + j]              has_residual = 1 (add before the norm)
//   y[j]   = x[j] * inverseSqrt(sum_j(x[j]^2) / H + eps) * weight[j] * output_scale
//   output[r*H + j] = y[j]                                   has_residual = 0 or 1
//   output[r*H + j] = residual[r*H + j] + y[j]               has_residual = 2 (add after the norm: Gemma 2/3
//                                                            sandwich norm, x = residual + post_norm(branch))
// `input` rows may be strided (S >= H); `residual` and `output` are packed [num_tokens, H]. Mode 1 does not
// write the pre-norm sum (there is no binding for it): use it where the sum is not needed afterwards (the final
// norm), or run residual.wgsl first. Gemma's (1 + weight) is folded into `weight` by the loader.
// `residual` must be bound even when has_residual = 0 (any buffer; it is not read then).
//
// Entry points (all workgroup_size(256, 1, 1); one workgroup per row; any hidden_size, any subgroup size):
//   main                 (rmsnorm.default)         two passes over the row in global memory; tree reduction.
//   main_small           (rmsnorm.small)           keeps up to 4 elements per invocation (H <= 1024) in
//                                                  registers: one global read of the row; tree reduction.
//   main_cached          (rmsnorm.residual)        keeps up to 4096 elements of x (after the pre-norm residual
//                                                  add) in workgroup memory (16 KiB; larger caches make
//                                                  SwiftShader's compile time grow ~0.4 ms per element);
//                                                  tree reduction.
//   main_subgroup        (rmsnorm.subgroup)        as main, reduction with subgroupAdd (needs `subgroups`).
//   main_small_subgroup  (rmsnorm.small_subgroup)  as main_small, reduction with subgroupAdd.
// Measured on an H200 (wall clock, H = 4096, 512 rows, pre-norm residual): main 20.9 us, main_small 20.4,
// main_subgroup 18.0, main_small_subgroup 16.8, main_cached 28.9 (the second pass of the others hits L1/L2, and
// main_cached pays occupancy and Dawn's zero-fill of 16 KiB workgroup memory per workgroup; with H = 128 it is
// 2.5x slower than main). For H well below 256, most of each workgroup idles.
// Invocation i of a row's workgroup handles elements j = i, i + 256, i + 512, ... Rows past 4 (small) or
// 4096 (cached) elements fall back to re-reading global memory, so every entry point is exact for every H.
// The subgroup reduction does not assume any subgroup size or layout (see workgroup_sum_sg).
//
// Dispatch: row r = workgroup_id.x + workgroup_id.y * num_workgroups.x:
//   [min(num_tokens, 65535), ceil(num_tokens / 65535), 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       f32 [num_tokens, S] (the last row needs only H elements)
//   2  weight    storage, read       f32 [H]
//   3  output    storage, read_write f32 [num_tokens, H] (written)
//   4  residual  storage, read       f32 [num_tokens, H] (read when has_residual = 1 or 2)
//
// Uniforms (the registry's `rmsnorm` base uniforms):
//   hidden_size: u32 @0, num_tokens: u32 @4, eps: f32 @8, has_residual: u32 @12, token_stride: u32 @16,
//   output_scale: f32 @20, _pad1: u32 @24, _pad2: u32 @28
//
// Feature sections: lines between `// #if subgroups` and `// #endif` are compiled only on devices with the
// `subgroups` feature (src/registry/wgsl-features.ts), so main, main_small and main_cached work without it.

// #if subgroups
enable subgroups;
// #endif

alias act_t = f32;

struct Uniforms {
  hidden_size: u32,
  num_tokens: u32,
  eps: f32,
  has_residual: u32,
  token_stride: u32,
  output_scale: f32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<act_t>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read_write> output: array<act_t>;
@group(0) @binding(4) var<storage, read> residual: array<act_t>;

const WG: u32 = 256u;
const REGS: u32 = 4u;      // main_small: elements kept in registers per invocation
const CACHE: u32 = 4096u;  // main_cached: elements kept in workgroup memory per row

var<workgroup> red: array<f32, 256>;
var<workgroup> row_cache: array<f32, 4096>;

fn row_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return wid.x + wid.y * nwg.x;
}

// x[j] of row r (with the pre-norm residual add in mode 1).
fn load_x(r: u32, j: u32) -> f32 {
  let S = select(u.token_stride, u.hidden_size, u.token_stride == 0u);
  var x = f32(input[r * S + j]);
  if (u.has_residual == 1u) {
    x += f32(residual[r * u.hidden_size + j]);
  }
  return x;
}

fn store_y(r: u32, j: u32, x: f32, inv_rms: f32) {
  var y = x * inv_rms * weight[j] * u.output_scale;
  if (u.has_residual == 2u) {
    y += f32(residual[r * u.hidden_size + j]);
  }
  output[r * u.hidden_size + j] = act_t(y);
}

fn inv_rms_of(sum_sq: f32) -> f32 {
  return inverseSqrt(sum_sq / f32(u.hidden_size) + u.eps);
}

// Sum of v over the workgroup (tree in workgroup memory); every invocation gets the total.
fn workgroup_sum(v: f32, li: u32) -> f32 {
  red[li] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) {
      red[li] += red[li + s];
    }
    workgroupBarrier();
  }
  return red[0];
}

// Streaming passes (main, main_subgroup).
fn sum_sq_stream(r: u32, li: u32) -> f32 {
  var ss = 0.0;
  for (var j = li; j < u.hidden_size; j += WG) {
    let x = load_x(r, j);
    ss = fma(x, x, ss);
  }
  return ss;
}

fn normalize_stream(r: u32, li: u32, inv: f32) {
  for (var j = li; j < u.hidden_size; j += WG) {
    store_y(r, j, load_x(r, j), inv);
  }
}

// Register-cached passes (main_small, main_small_subgroup): xs[k] = x[li + k*256] for k < REGS.
fn sum_sq_regs(r: u32, li: u32, xs: ptr<function, vec4<f32>>) -> f32 {
  var ss = 0.0;
  for (var k = 0u; k < REGS; k++) {
    let j = li + k * WG;
    if (j < u.hidden_size) {
      let x = load_x(r, j);
      (*xs)[k] = x;
      ss = fma(x, x, ss);
    }
  }
  for (var j = li + REGS * WG; j < u.hidden_size; j += WG) {
    let x = load_x(r, j);
    ss = fma(x, x, ss);
  }
  return ss;
}

fn normalize_regs(r: u32, li: u32, xs: vec4<f32>, inv: f32) {
  for (var k = 0u; k < REGS; k++) {
    let j = li + k * WG;
    if (j < u.hidden_size) {
      store_y(r, j, xs[k], inv);
    }
  }
  for (var j = li + REGS * WG; j < u.hidden_size; j += WG) {
    store_y(r, j, load_x(r, j), inv);
  }
}

@compute @workgroup_size(256, 1, 1)
fn main(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
) {
  let r = row_index(wid, nwg);
  if (r >= u.num_tokens) {
    return;
  }
  let inv = inv_rms_of(workgroup_sum(sum_sq_stream(r, li), li));
  normalize_stream(r, li, inv);
}

@compute @workgroup_size(256, 1, 1)
fn main_small(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
) {
  let r = row_index(wid, nwg);
  if (r >= u.num_tokens) {
    return;
  }
  var xs = vec4<f32>(0.0);
  let inv = inv_rms_of(workgroup_sum(sum_sq_regs(r, li, &xs), li));
  normalize_regs(r, li, xs, inv);
}

@compute @workgroup_size(256, 1, 1)
fn main_cached(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
) {
  let r = row_index(wid, nwg);
  if (r >= u.num_tokens) {
    return;
  }
  let H = u.hidden_size;
  var ss = 0.0;
  for (var j = li; j < H; j += WG) {
    let x = load_x(r, j);
    if (j < CACHE) {
      row_cache[j] = x;
    }
    ss = fma(x, x, ss);
  }
  let inv = inv_rms_of(workgroup_sum(ss, li));
  // Each invocation reads back only the elements it cached itself.
  for (var j = li; j < H; j += WG) {
    var x: f32;
    if (j < CACHE) {
      x = row_cache[j];
    } else {
      x = load_x(r, j);
    }
    store_y(r, j, x, inv);
  }
}

// #if subgroups
var<workgroup> sg_red: array<f32, 256>;

// Sum of v over the workgroup with subgroup operations, for any subgroup size and any mapping of invocations
// to subgroups (WGSL defines no relation between subgroup_invocation_id and local_invocation_index):
// each subgroup's first active lane stores its subgroup's sum at its own local index (all other slots get 0);
// after one barrier every subgroup sums all 256 slots (its n lanes take slots rank, rank + n, ...) and
// reduces again, so every invocation gets the same total. One barrier instead of eight.
fn workgroup_sum_sg(v: f32, li: u32) -> f32 {
  let rank = subgroupExclusiveAdd(1u);
  let n = subgroupAdd(1u);
  let s = subgroupAdd(v);
  sg_red[li] = select(0.0, s, rank == 0u);
  workgroupBarrier();
  var acc = 0.0;
  for (var i = rank; i < WG; i += n) {
    acc += sg_red[i];
  }
  return subgroupAdd(acc);
}

@compute @workgroup_size(256, 1, 1)
fn main_subgroup(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
) {
  let r = row_index(wid, nwg);
  if (r >= u.num_tokens) {
    return;
  }
  let inv = inv_rms_of(workgroup_sum_sg(sum_sq_stream(r, li), li));
  normalize_stream(r, li, inv);
}

@compute @workgroup_size(256, 1, 1)
fn main_small_subgroup(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
) {
  let r = row_index(wid, nwg);
  if (r >= u.num_tokens) {
    return;
  }
  var xs = vec4<f32>(0.0);
  let inv = inv_rms_of(workgroup_sum_sg(sum_sq_regs(r, li, &xs), li));
  normalize_regs(r, li, xs, inv);
}
// #endif
