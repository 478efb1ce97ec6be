// residual_rmsnorm_pair.wgsl: the residual add that ends a sub-layer fused with the RMS norm that starts the next,
// with both results written (the sum stays the residual stream; the norm feeds the next projections).
//
// For each row r < num_tokens (H = hidden_size, S = token_stride, 0 means H):
//   s[j]                   = input[r*S + j] + residual[r*H + j]
//   residual_output[r*H+j] = s[j]
//   norm_output[r*H + j]   = s[j] * inverseSqrt(sum_j(s[j]^2) / H + eps) * norm_weight[j] * output_scale
// `input` rows may be strided (S >= H); the other rows are packed [num_tokens, H]. residual_output may be the
// residual buffer itself only if the caller binds it once as read-write; here the two are distinct bindings, so
// they must be distinct buffers.
//
// Entry point `main` (residual_rmsnorm_pair.subgroup), workgroup_size(256, 1, 1), needs `subgroups` (any subgroup
// size and layout). One workgroup per row: invocation i handles elements j = i, i + 256, ...; the first pass adds
// and writes the sums and their squares, one subgroup reduction per subgroup and one barrier give the row's sum of
// squares (the slots of workgroup memory are taken at each subgroup's first active lane's local index), and the
// second pass reads the sums back from residual_output (written by this same invocation) and writes the norm.
// Dispatch: row r = workgroup_id.x + workgroup_id.y * num_workgroups.x: [min(num_tokens, 65535), ceil(num_tokens /
// 65535), 1].
//
// Bindings (group 0):
//   0  uniforms         uniform             Uniforms (below)
//   1  input            storage, read       f32 [num_tokens, S] (the last row needs only H elements)
//   2  residual         storage, read       f32 [num_tokens, H]
//   3  norm_weight      storage, read       f32 [H]
//   4  residual_output  storage, read_write f32 [num_tokens, H] (written)
//   5  norm_output      storage, read_write f32 [num_tokens, H] (written)
//
// Uniforms (the registry's `residual_rmsnorm_pair` base uniforms):
//   hidden_size: u32 @0, num_tokens: u32 @4, eps: f32 @8, output_scale: f32 @12, token_stride: u32 @16,
//   _pad0: u32 @20, _pad1: u32 @24, _pad2: u32 @28

enable subgroups;

struct Uniforms {
  hidden_size: u32,
  num_tokens: u32,
  eps: f32,
  output_scale: f32,
  token_stride: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read> residual: array<f32>;
@group(0) @binding(3) var<storage, read> norm_weight: array<f32>;
@group(0) @binding(4) var<storage, read_write> residual_output: array<f32>;
@group(0) @binding(5) var<storage, read_write> norm_output: array<f32>;

const WG: u32 = 256u;
var<workgroup> sg_red: array<f32, WG>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let r = wid.x + wid.y * nwg.x;
  // Every invocation of a workgroup takes the same branch here (r is uniform), so the barrier below stays uniform.
  if (r >= u.num_tokens) {
    return;
  }
  let H = u.hidden_size;
  let S = select(u.token_stride, H, u.token_stride == 0u);
  var ss = 0.0;
  for (var j = li; j < H; j += WG) {
    let s = input[r * S + j] + residual[r * H + j];
    residual_output[r * H + j] = s;
    ss += s * s;
  }
  // Workgroup sum: each subgroup's first active lane stores its subgroup's sum at its own index (the other slots
  // get 0); after one barrier each subgroup adds all slots (its n lanes take slots rank, rank + n, ...).
  let rank = subgroupExclusiveAdd(1u);
  let n = subgroupAdd(1u);
  let part = subgroupAdd(ss);
  sg_red[li] = select(0.0, part, rank == 0u);
  workgroupBarrier();
  var acc = 0.0;
  for (var i = rank; i < WG; i += n) {
    acc += sg_red[i];
  }
  let total = subgroupAdd(acc);
  let inv = inverseSqrt(total / f32(H) + u.eps) * u.output_scale;
  for (var j = li; j < H; j += WG) {
    norm_output[r * H + j] = residual_output[r * H + j] * inv * norm_weight[j];
  }
}
