// Generated from src/kernels/templates/rmsnorm.wgsl.jinja ({"T":"f16","sg":false,"cached":false,"small_entry":"rmsnorm_small_f16","variants":{"main":"rmsnorm.default_f16","small":"rmsnorm.small_f16"}}) by scripts/gen-sources.ts; do not edit.
// rmsnorm_f16.wgsl: RMS normalization of rows, with an optional fused residual add before or after the norm.
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
// Entry points (all workgroup_size(256, 1, 1); one workgroup per row; any hidden_size):
//   main                 (rmsnorm.default_f16)         two passes over the row in global memory; tree reduction.
//   rmsnorm_small_f16    (rmsnorm.small_f16)           keeps up to 4 elements per invocation (H <= 1024) in
//                                                  registers: one global read of the row; tree reduction.
// Invocation i of a row's workgroup handles elements j = i, i + 256, i + 512, ... Rows past 4 (small) elements fall back to re-reading global memory, so every entry point is exact for every H.
//
// Dispatch: row r = workgroup_id.x + workgroup_id.y * num_workgroups.x:
//   [min(num_tokens, 65535), ceil(num_tokens / 65535), 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  input     storage, read       f16 [num_tokens, S] (the last row needs only H elements)
//   2  weight    storage, read       f32 [H]
//   3  output    storage, read_write f16 [num_tokens, H] (written)
//   4  residual  storage, read       f16 [num_tokens, H] (read when has_residual = 1 or 2)
//
// Uniforms (the registry's `rmsnorm` base uniforms):
//   hidden_size: u32 @0, num_tokens: u32 @4, eps: f32 @8, has_residual: u32 @12, token_stride: u32 @16,
//   output_scale: f32 @20, _pad1: u32 @24, _pad2: u32 @28
//
// f16 variant (generated from the same template as rmsnorm.wgsl): input, residual and output hold f16 (`act_t` =
// f16, `enable f16;`, needs shader-f16), the weight stays f32; values are widened to f32 as they are read, the sum
// of squares and the norm are computed in f32, and y is rounded to f16 once as it is stored. No subgroup section.
//
enable f16;

alias act_t = f16;

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
const REGS: u32 = 4u;      // rmsnorm_small_f16: elements kept in registers per invocation

var<workgroup> red: array<f32, 256>;

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

// Streaming passes (main).
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

// Register-cached passes (rmsnorm_small_f16): xs[k] = x[li + k*256] for k < REGS.
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
fn rmsnorm_small_f16(
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
