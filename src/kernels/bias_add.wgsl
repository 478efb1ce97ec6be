// Generated from src/kernels/templates/bias_add.wgsl.jinja ({"T":"f32","variant":"bias_add.default"}) by scripts/gen-sources.ts; do not edit.
// bias_add.wgsl: in-place bias addition over the rows of a (possibly wider, strided) activation buffer.
//
//   data[t*S + data_offset + j] += bias[bias_offset + j]      for t < num_tokens, j < dim
// with row stride S = token_stride (0 means dim). data_offset selects a column slice of each row (e.g. the k part
// of a fused QKV output), bias_offset a slice of a packed bias vector. Elements outside the slice are untouched.
//
// Entry point `main` (variant bias_add.default), workgroup_size(256, 1, 1).
// One invocation updates one element per grid-stride step: elements i = gid.x, gid.x + stride, ... of the
// num_tokens * dim slice (t = i / dim, j = i % dim), stride = num_workgroups.x * 256, so any dispatch width covers
// any size. Dispatch: [min(ceil(num_tokens * dim / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  data      storage, read_write f32 [num_tokens, S] (updated in place)
//   2  bias      storage, read       f32 [bias_offset + dim]
//
// Uniforms (the registry's `bias_add` base uniforms):
//   num_tokens: u32 @0, dim: u32 @4, data_offset: u32 @8, bias_offset: u32 @12, token_stride: u32 @16,
//   _pad0: u32 @20, _pad1: u32 @24, _pad2: u32 @28

alias act_t = f32;

struct Uniforms {
  num_tokens: u32,
  dim: u32,
  data_offset: u32,
  bias_offset: u32,
  token_stride: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read_write> data: array<act_t>;
@group(0) @binding(2) var<storage, read> bias: array<act_t>;

const WG: u32 = 256u;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let D = u.dim;
  let total = u.num_tokens * D;
  let S = select(u.token_stride, D, u.token_stride == 0u);
  let stride = nwg.x * WG;
  for (var i = gid.x; i < total; i += stride) {
    let t = i / D;
    let j = i - t * D;
    let o = t * S + u.data_offset + j;
    data[o] = act_t(f32(data[o]) + f32(bias[u.bias_offset + j]));
  }
}