// Generated from src/kernels/templates/rmsnorm_qk.wgsl.jinja ({"T":"f16","variant":"rmsnorm_qk.default_f16"}) by scripts/gen-sources.ts; do not edit.
// rmsnorm_qk_f16.wgsl: per-head RMS normalization of query rows and key rows with separate weights (Qwen3 / Gemma 3
// q_norm and k_norm) in one dispatch.
//
// Rows r < q_rows are query heads, rows q_rows <= r < q_rows + k_rows are key heads (row i = r - q_rows of k).
// For a row of x (D = head_dim, S = row_stride, 0 means D):
//   x[j] = q_input[i*S + j]   (query row i)      or   k_input[i*S + j]   (key row i)
//   y[j] = x[j] * inverseSqrt(sum_j(x[j]^2) / D + eps) * weight[j]    (weight = q_weight or k_weight, [D])
//   q_output[i*D + j] = y[j]   or   k_output[i*D + j] = y[j]
// A row is one head of one token: for q laid out [tokens, heads, D] the rows are its tokens*heads rows of D.
// Input rows may be strided (S >= D, e.g. heads inside a wider row); outputs are packed [rows, D] (like
// rmsnorm.wgsl). Gemma's (1 + weight) is folded into the weights by the loader. k_rows = 0 normalizes only q (bind
// any buffers to the k bindings; they are not accessed), and likewise q_rows = 0.
//
// Entry point `main` (variant rmsnorm_qk.default_f16), workgroup_size(256, 1, 1).
// One workgroup per row: invocation i handles elements j = i, i + 256, ... (any head_dim); the sum of squares is a
// tree reduction in workgroup memory. f32 math, f16 in and out.
// Dispatch: row r = workgroup_id.x + workgroup_id.y * num_workgroups.x, with R = q_rows + k_rows:
//   [min(R, 65535), ceil(R / 65535), 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  q_input   storage, read       f16 [q_rows, S] (the last row needs only D elements)
//   2  q_weight  storage, read       f32 [D]
//   3  q_output  storage, read_write f16 [q_rows, D] (written)
//   4  k_input   storage, read       f16 [k_rows, S]
//   5  k_weight  storage, read       f32 [D]
//   6  k_output  storage, read_write f16 [k_rows, D] (written)
//
// Uniforms (the registry's `rmsnorm_qk` base uniforms):
//   q_rows: u32 @0, k_rows: u32 @4, head_dim: u32 @8, row_stride: u32 @12, eps: f32 @16, _pad0: u32 @20,
//   _pad1: u32 @24, _pad2: u32 @28

// f16 variant (generated from the same template as the f32 one): the activation buffers hold f16 (`act_t` = f16,
// `enable f16;`, needs shader-f16), the weights stay f32; values are widened to f32 as they are read, everything is
// computed in f32, and results are rounded to f16 once as they are stored.
//
enable f16;

alias act_t = f16;

struct Uniforms {
  q_rows: u32,
  k_rows: u32,
  head_dim: u32,
  row_stride: u32,
  eps: f32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> q_input: array<act_t>;
@group(0) @binding(2) var<storage, read> q_weight: array<f32>;
@group(0) @binding(3) var<storage, read_write> q_output: array<act_t>;
@group(0) @binding(4) var<storage, read> k_input: array<act_t>;
@group(0) @binding(5) var<storage, read> k_weight: array<f32>;
@group(0) @binding(6) var<storage, read_write> k_output: array<act_t>;

const WG: u32 = 256u;

var<workgroup> red: array<f32, 256>;

fn load_x(is_k: bool, i: u32, j: u32) -> f32 {
  let S = select(u.row_stride, u.head_dim, u.row_stride == 0u);
  if (is_k) {
    return f32(k_input[i * S + j]);
  }
  return f32(q_input[i * S + j]);
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

@compute @workgroup_size(256, 1, 1)
fn main(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
) {
  let r = wid.x + wid.y * nwg.x;
  if (r >= u.q_rows + u.k_rows) {
    return;
  }
  let is_k = r >= u.q_rows;
  let i = select(r, r - u.q_rows, is_k);
  let D = u.head_dim;
  var ss = 0.0;
  for (var j = li; j < D; j += WG) {
    let x = load_x(is_k, i, j);
    ss = fma(x, x, ss);
  }
  let inv = inverseSqrt(workgroup_sum(ss, li) / f32(D) + u.eps);
  for (var j = li; j < D; j += WG) {
    let x = load_x(is_k, i, j) * inv;
    if (is_k) {
      k_output[i * D + j] = act_t(x * k_weight[j]);
    } else {
      q_output[i * D + j] = act_t(x * q_weight[j]);
    }
  }
}