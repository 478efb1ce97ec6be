// Generated from src/kernels/templates/gather.wgsl.jinja ({"variant":"gather.vec4","table":"f32","outT":"f32","vec4":true,"entry":"gather_vec4","wg":64}) by scripts/gen-sources.ts; do not edit.
// gather_vec4.wgsl: embedding row lookup (f32 table, u32 token ids) into f32 output, four columns per
// invocation.
// Same semantics and uniforms as gather.wgsl (generated from the same template):
//
//   id  = indices[index_offset + t]
//   row stride S = input_hidden_size (0 means hidden_size)
//   output[t, h] = embeddings[id * S + hidden_offset + h]      table [vocab_size, S]
//   id >= vocab_size (out of range) writes 0.
// for t < num_tokens, h < hidden_size. Output is packed [num_tokens, hidden_size].
// vec4: the contract runs this only when transpose = 0 and hidden_size, S and hidden_offset are multiples of 4
// (rows and column slices start on a 4-element boundary); `transpose` is not read.
//
// Entry point `gather_vec4` (variant gather.vec4), workgroup_size(64, 1, 1).
// One invocation computes four consecutive output elements (one vec4) per grid-stride step: groups
// q = gid.x, gid.x + stride, ... < num_tokens * hidden_size / 4, stride = num_workgroups.x * 64.
// Dispatch: [min(ceil(num_tokens * hidden_size / 4 / 64), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms    uniform             Uniforms (below)
//   1  indices     storage, read       u32 [index_offset + num_tokens]
//   2  embeddings  storage, read       f32 [vocab_size, S]
//   3  output      storage, read_write f32 [num_tokens, hidden_size] (written)
//
// Uniforms (the registry's `gather` base uniforms):
//   num_tokens: u32 @0, hidden_size: u32 @4, vocab_size: u32 @8, transpose: u32 @12, index_offset: u32 @16,
//   input_hidden_size: u32 @20, hidden_offset: u32 @24, _pad0: u32 @28, _pad1: u32 @32

struct Uniforms {
  num_tokens: u32,
  hidden_size: u32,
  vocab_size: u32,
  transpose: u32,
  index_offset: u32,
  input_hidden_size: u32,
  hidden_offset: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> indices: array<u32>;
@group(0) @binding(2) var<storage, read> embeddings: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> output: array<vec4<f32>>;

const WG: u32 = 64u;

@compute @workgroup_size(64, 1, 1)
fn gather_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let H = u.hidden_size;
  let H4 = H / 4u;
  let total = u.num_tokens * H4;
  let stride = nwg.x * WG;
  let S = select(u.input_hidden_size, H, u.input_hidden_size == 0u);
  for (var q = gid.x; q < total; q += stride) {
    let t = q / H4;
    let h = 4u * (q - t * H4);
    let id = indices[u.index_offset + t];
    var v = vec4<f32>(0.0);
    if (id < u.vocab_size) {
      v = embeddings[(id * S + u.hidden_offset + h) / 4u];
    }
    output[q] = v;
  }
}