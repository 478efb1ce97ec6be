// Generated from src/kernels/templates/rope.wgsl.jinja ({"op":"rope","T":"f32","buffers":["input"],"v":{"main":"rope.default","compute_freqs":"rope.compute_freqs","qk":"rope.qk","ntk":"rope.ntk","yarn":"rope.yarn"}}) by scripts/gen-sources.ts; do not edit.
// rope.wgsl: rotary position embeddings, in place on `input` [seq_len, num_heads, head_dim].
//
// Pairs: rotary_dim must be even; half = rotary_dim / 2 pairs p per head; span P = pair_span_dim (0 means
// rotary_dim). Element offsets of pair p within a head:
//   interleaved = 0:  (p, p + P/2)    NeoX / HF rotate_half; P = rotary_dim is HF's partial rotary
//                                     (q[..., :rotary_dim]); P = head_dim with rotary_dim < head_dim is
//                                     "proportional" rope (partner half a head away). Needs P >= rotary_dim.
//   interleaved = 1:  (2p, 2p + 1)    GPT-J / Meta adjacent pairs.
// Rotation of token t (position pos = start_pos + t) with angle theta:
//   x0' = x0 * cos - x1 * sin,   x1' = x0 * sin + x1 * cos
// Elements of a head outside the rotated pairs (the tail of a partial rotary) are left untouched.
//
// Entry points (all workgroup_size(256, 1, 1)); one invocation rotates one pair (t, head, p) per grid-stride
// step over seq_len * num_heads * half (stride num_workgroups.x * 256):
//   main                (rope.default)        cos/sin from tables: freqs_cos[pos * half + p], freqs_sin[...]
//                                             ([positions, half], built by the host for any rope type:
//                                             default, linear, dynamic NTK, YaRN (attention factor folded
//                                             in), llama3, longrope). rope_base and rope_scale are unused.
//   rope_compute_freqs  (rope.compute_freqs)  theta = pos * rope_base^(-2p/P) / rope_scale, computed in the
//                                             kernel (HF "default" and "linear" rope_type; rope_scale = the
//                                             linear factor, 1 = none); tables unused.
//   rope_qk             (rope.qk)             as rope_compute_freqs, on a fused Q|K buffer laid out per token
//                                             as [2 * num_heads, head_dim]: heads 0..num_heads-1 are Q, the
//                                             next num_heads are K (MHA); one cos/sin serves both pairs.
//   rope_ntk_scaled     (rope.ntk)            NTK-aware base: theta = pos * base'^(-2p/P) with
//                                             base' = rope_base * rope_scale^(P / (P - 2)). HF "dynamic" NTK
//                                             is this with rope_scale = factor * L / L_max - (factor - 1)
//                                             computed by the host for the current length L > L_max.
//   (rope.yarn has no entry point: HF YaRN needs original_max_position_embeddings, beta_fast/slow and the
//    attention factor, which the registry's uniforms do not carry; use main with YaRN tables.)
// In-kernel angles: theta in f32 (as HF computes it), cos/sin by range reduction and polynomials (cos_sin), not
// the device builtins; the frequencies use the device's exp2/log2 (the tables of `main` can be computed in f64).
// Dispatch: [min(ceil(seq_len * num_heads * (rotary_dim / 2) / 256), 65535), 1, 1].
//
// Bindings (group 0):
//   0  uniforms   uniform             Uniforms (below)
//   1  input      storage, read_write f32 [seq_len, num_heads, head_dim] (rope_qk: [seq_len, 2*num_heads,
//                                     head_dim]); rotated in place (written)
//   2  freqs_cos  storage, read_write f32 [start_pos + seq_len, rotary_dim / 2] (read by main only)
//   3  freqs_sin  storage, read_write f32 [start_pos + seq_len, rotary_dim / 2] (read by main only)
//   freqs_cos / freqs_sin are declared read_write only because the registry's layout types them `storage`
//   (Dawn rejects a `read` declaration against a `storage` layout entry); no entry point writes them.
//
// Uniforms (the registry's `rope` base uniforms):
//   seq_len: u32 @0, num_heads: u32 @4, head_dim: u32 @8, start_pos: u32 @12, rope_base: f32 @16,
//   rope_scale: f32 @20, rotary_dim: u32 @24, interleaved: u32 @28, pair_span_dim: u32 @32, _pad0: u32 @36,
//   _pad1: u32 @40, _pad2: u32 @44

alias act_t = f32;

struct Uniforms {
  seq_len: u32,
  num_heads: u32,
  head_dim: u32,
  start_pos: u32,
  rope_base: f32,
  rope_scale: f32,
  rotary_dim: u32,
  interleaved: u32,
  pair_span_dim: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read_write> input: array<act_t>;
@group(0) @binding(2) var<storage, read_write> freqs_cos: array<f32>;
@group(0) @binding(3) var<storage, read_write> freqs_sin: array<f32>;

const WG: u32 = 256u;
const PIO2_HI: f32 = 1.5703125;              // pi/2 split for range reduction: HI has 8 significant bits, so
const PIO2_LO: f32 = 4.838267923332751e-4;   // k * HI is exact for |k| < 2^16 (|theta| < ~1e5)
const TWO_OVER_PI: f32 = 0.6366197723675814;

// Pair (t, h, p) of grid index i; x = token, y = head, z = pair.
fn decompose(i: u32, half: u32) -> vec3<u32> {
  let per_tok = u.num_heads * half;
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

fn rotate(head_base: u32, p: u32, cs: vec2<f32>) {
  let o = pair_offsets(p);
  let x0 = f32(input[head_base + o.x]);
  let x1 = f32(input[head_base + o.y]);
  input[head_base + o.x] = act_t(x0 * cs.x - x1 * cs.y);
  input[head_base + o.y] = act_t(x0 * cs.y + x1 * cs.x);
}

// (cos, sin) of theta, to about 1e-7 on every device: the builtin cos/sin may be as coarse as Vulkan allows
// (2^-11 absolute; SwiftShader's are ~2e-4 off), so reduce to r in [-pi/4, pi/4] plus a quadrant and use the
// Taylor polynomials (truncation error < 2e-9 there).
fn cos_sin(theta: f32) -> vec2<f32> {
  let k = round(theta * TWO_OVER_PI);
  let r = (theta - k * PIO2_HI) - k * PIO2_LO;
  let r2 = r * r;
  let s = fma(r * r2, fma(r2, fma(r2, fma(r2, 2.7557319e-6, -1.9841270e-4), 8.3333338e-3), -0.16666667), r);
  let c = fma(r2, fma(r2, fma(r2, fma(r2, fma(r2, -2.7557320e-7, 2.4801588e-5), -1.3888889e-3), 4.1666668e-2), -0.5), 1.0);
  switch (i32(k) & 3) {
    case 0: { return vec2<f32>(c, s); }
    case 1: { return vec2<f32>(-s, c); }
    case 2: { return vec2<f32>(-c, -s); }
    default: { return vec2<f32>(s, -c); }
  }
}

// theta for HF default / linear rope: pos * base^(-2p/P) / scale.
fn theta_linear(pos: u32, p: u32) -> f32 {
  let scale = select(1.0, u.rope_scale, u.rope_scale > 0.0);
  let inv_freq = exp2(-(f32(2u * p) / f32(span())) * log2(u.rope_base));
  return f32(pos) * (inv_freq / scale);
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = u.rotary_dim / 2u;
  let total = u.seq_len * u.num_heads * half;
  for (var i = gid.x; i < total; i += nwg.x * WG) {
    let d = decompose(i, half);
    let f = (u.start_pos + d.x) * half + d.z;
    rotate((d.x * u.num_heads + d.y) * u.head_dim, d.z, vec2<f32>(freqs_cos[f], freqs_sin[f]));
  }
}

@compute @workgroup_size(256, 1, 1)
fn rope_compute_freqs(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = u.rotary_dim / 2u;
  let total = u.seq_len * u.num_heads * half;
  for (var i = gid.x; i < total; i += nwg.x * WG) {
    let d = decompose(i, half);
    let cs = cos_sin(theta_linear(u.start_pos + d.x, d.z));
    rotate((d.x * u.num_heads + d.y) * u.head_dim, d.z, cs);
  }
}

@compute @workgroup_size(256, 1, 1)
fn rope_qk(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = u.rotary_dim / 2u;
  let total = u.seq_len * u.num_heads * half;
  for (var i = gid.x; i < total; i += nwg.x * WG) {
    let d = decompose(i, half);
    let cs = cos_sin(theta_linear(u.start_pos + d.x, d.z));
    let q_base = (d.x * 2u * u.num_heads + d.y) * u.head_dim;
    rotate(q_base, d.z, cs);
    rotate(q_base + u.num_heads * u.head_dim, d.z, cs);
  }
}

@compute @workgroup_size(256, 1, 1)
fn rope_ntk_scaled(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = u.rotary_dim / 2u;
  let total = u.seq_len * u.num_heads * half;
  let P = f32(span());
  let scale = select(1.0, u.rope_scale, u.rope_scale > 0.0);
  // log2(base') = log2(base) + P / (P - 2) * log2(scale); P <= 2 (one pair, angle pos * 1) keeps the base.
  let log2_base = log2(u.rope_base) + select(0.0, P / (P - 2.0) * log2(scale), P > 2.0);
  for (var i = gid.x; i < total; i += nwg.x * WG) {
    let d = decompose(i, half);
    let inv_freq = exp2(-(f32(2u * d.z) / P) * log2_base);
    let cs = cos_sin(f32(u.start_pos + d.x) * inv_freq);
    rotate((d.x * u.num_heads + d.y) * u.head_dim, d.z, cs);
  }
}
