// Generated from src/kernels/templates/rope.wgsl.jinja ({"op":"rope_qk","T":"f32","buffers":["q_input","k_input"],"v":{"main":"rope_qk.default"}}) by scripts/gen-sources.ts; do not edit.
// rope_qk.wgsl: rotary position embeddings of separate Q and K buffers in one dispatch, in place, from cos/sin tables.
//
// q_input [seq_len, num_q_heads, head_dim] and k_input [seq_len, num_kv_heads, head_dim] (GQA: num_kv_heads may
// differ) are rotated with the same angles: token t (position pos = start_pos + t), pair p of every head:
//   cos = freqs_cos[pos * half + p], sin = freqs_sin[pos * half + p]        (half = rotary_dim / 2)
//   x0' = x0 * cos - x1 * sin,   x1' = x0 * sin + x1 * cos
// Pairs within a head as in rope.wgsl: interleaved = 0: (p, p + P/2) with span P = pair_span_dim (0 means
// rotary_dim); interleaved = 1: (2p, 2p + 1). Elements outside the rotated pairs are left untouched. The tables
// ([positions, half], built by the host for any rope type) are rope.default's.
//
// Entry point `main` (rope_qk.default), workgroup_size(256, 1, 1): one invocation rotates one pair (t, head, p) per
// grid-stride step over seq_len * (num_q_heads + num_kv_heads) * half (stride num_workgroups.x * 256); heads
// h < num_q_heads are Q heads, the next num_kv_heads are K heads. Angles come from the tables only.
// Dispatch: [min(ceil(seq_len * (num_q_heads + num_kv_heads) * (rotary_dim / 2) / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms   uniform             Uniforms (below)
//   1  q_input    storage, read_write f32 [seq_len, num_q_heads, head_dim] (rotated in place)
//   2  k_input    storage, read_write f32 [seq_len, num_kv_heads, head_dim] (rotated in place)
//   3  freqs_cos  storage, read       f32 [start_pos + seq_len, rotary_dim / 2]
//   4  freqs_sin  storage, read       f32 [start_pos + seq_len, rotary_dim / 2]
//
// Uniforms (the registry's `rope_qk` base uniforms):
//   seq_len: u32 @0, num_q_heads: u32 @4, num_kv_heads: u32 @8, head_dim: u32 @12, start_pos: u32 @16,
//   rotary_dim: u32 @20, interleaved: u32 @24, pair_span_dim: u32 @28

alias act_t = f32;

struct Uniforms {
  seq_len: u32,
  num_q_heads: u32,
  num_kv_heads: u32,
  head_dim: u32,
  start_pos: u32,
  rotary_dim: u32,
  interleaved: u32,
  pair_span_dim: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read_write> q_input: array<act_t>;
@group(0) @binding(2) var<storage, read_write> k_input: array<act_t>;
@group(0) @binding(3) var<storage, read> freqs_cos: array<f32>;
@group(0) @binding(4) var<storage, read> freqs_sin: array<f32>;

const WG: u32 = 256u;
// Pair (t, h, p) of grid index i; x = token, y = head, z = pair.
fn decompose(i: u32, half: u32) -> vec3<u32> {
  let per_tok = (u.num_q_heads + u.num_kv_heads) * half;
  let t = i / per_tok;
  let rem = i - t * per_tok;
  let h = rem / half;
  return vec3<u32>(t, h, rem - h * half);
}

fn span() -> u32 {
  return select(u.pair_span_dim, u.rotary_dim, u.pair_span_dim == 0u);
}

// Offsets of pair p's two elements within a head.
fn pair_offsets(p: u32) -> vec2<u32> {
  if (u.interleaved != 0u) {
    return vec2<u32>(2u * p, 2u * p + 1u);
  }
  return vec2<u32>(p, p + span() / 2u);
}

fn rotate_q_input(head_base: u32, p: u32, cs: vec2<f32>) {
  let o = pair_offsets(p);
  let x0 = f32(q_input[head_base + o.x]);
  let x1 = f32(q_input[head_base + o.y]);
  q_input[head_base + o.x] = act_t(x0 * cs.x - x1 * cs.y);
  q_input[head_base + o.y] = act_t(x0 * cs.y + x1 * cs.x);
}

fn rotate_k_input(head_base: u32, p: u32, cs: vec2<f32>) {
  let o = pair_offsets(p);
  let x0 = f32(k_input[head_base + o.x]);
  let x1 = f32(k_input[head_base + o.y]);
  k_input[head_base + o.x] = act_t(x0 * cs.x - x1 * cs.y);
  k_input[head_base + o.y] = act_t(x0 * cs.y + x1 * cs.x);
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = u.rotary_dim / 2u;
  let total = u.seq_len * (u.num_q_heads + u.num_kv_heads) * half;
  for (var i = gid.x; i < total; i += nwg.x * WG) {
    let d = decompose(i, half);
    let f = (u.start_pos + d.x) * half + d.z;
    let cs = vec2<f32>(freqs_cos[f], freqs_sin[f]);
    if (d.y < u.num_q_heads) {
      rotate_q_input((d.x * u.num_q_heads + d.y) * u.head_dim, d.z, cs);
    } else {
      rotate_k_input((d.x * u.num_kv_heads + d.y - u.num_q_heads) * u.head_dim, d.z, cs);
    }
  }
}
