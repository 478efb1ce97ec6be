// Generated from src/kernels/templates/gather.wgsl.jinja ({"variant":"gather.f16","table":"f16","outT":"f32","vec4":false,"entry":"main","wg":256}) by scripts/gen-sources.ts; do not edit.
// gather_f16.wgsl: embedding row lookup from an f16 table into f32 output (u32 token ids), e.g. a weight-tied
// lm_head kept in f16. Same semantics and uniforms as gather.wgsl; only the table's element type differs.
//
//   id  = indices[index_offset + t]
//   row stride S = input_hidden_size (0 means hidden_size)
//   transpose = 0:  output[t, h] = embeddings[id * S + hidden_offset + h]              table [vocab_size, S]
//   transpose = 1:  output[t, h] = embeddings[(hidden_offset + h) * vocab_size + id]   table [S, vocab_size]
//   id >= vocab_size (out of range) writes 0.
// for t < num_tokens, h < hidden_size. Output is packed [num_tokens, hidden_size].
// The table is read as u32 words holding two f16 each (element e is the low half of word e/2 when e is even, the
// high half when odd), converted with unpack2x16float, so rows need not be word-aligned (odd S is fine); no f16
// arithmetic or `enable f16` is needed (the registry still lists shader-f16 for this variant).
// index_offset lets a kernel read ids from the middle of a GPU-resident token buffer; input_hidden_size and
// hidden_offset select a column slice of a wider table (e.g. one layer's slice of a packed per-layer table).
//
// Entry point `main` (variant gather.f16), workgroup_size(256, 1, 1).
// One invocation computes one output element per grid-stride step: elements i = gid.x, gid.x + stride, ...
// with stride = num_workgroups.x * 256, so any dispatch width covers any num_tokens * hidden_size.
// Dispatch: [min(ceil(num_tokens * hidden_size / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms    uniform             Uniforms (below)
//   1  indices     storage, read       u32 [index_offset + num_tokens]
//   2  embeddings  storage, read       f16 [vocab_size, S] (or [S, vocab_size] when transpose = 1) as u32 words
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
@group(0) @binding(2) var<storage, read> embeddings: array<u32>;
@group(0) @binding(3) var<storage, read_write> output: array<f32>;

const WG: u32 = 256u;

// Table element e as f32.
fn table_at(e: u32) -> f32 {
  let v = unpack2x16float(embeddings[e >> 1u]);
  return select(v.x, v.y, (e & 1u) == 1u);
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let H = u.hidden_size;
  let total = u.num_tokens * H;
  let stride = nwg.x * WG;
  let S = select(u.input_hidden_size, H, u.input_hidden_size == 0u);
  for (var i = gid.x; i < total; i += stride) {
    let t = i / H;
    let h = i - t * H;
    let id = indices[u.index_offset + t];
    var v = 0.0;
    if (id < u.vocab_size) {
      if (u.transpose == 0u) {
        v = table_at(id * S + u.hidden_offset + h);
      } else {
        v = table_at((u.hidden_offset + h) * u.vocab_size + id);
      }
    }
    output[i] = v;
  }
}