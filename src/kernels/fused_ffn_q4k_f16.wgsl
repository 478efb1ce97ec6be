// Generated from src/kernels/templates/fused_ffn_q4k.wgsl.jinja ({"a":"f16","entries":[{"name":"main","variant":"fused_ffn.q4k_f16a","rows":1},{"name":"main_batched","variant":"fused_ffn.q4k_batched_f16a","rows":4}]}) by scripts/gen-sources.ts; do not edit.
// fused_ffn_q4k_f16.wgsl: fused gate/up projection + gated activation (the first half of a SwiGLU / GeGLU FFN), Q4_K weights,
// f16 activations (widened to f32 on load, `enable f16`), f32 output.
//
//   out[m, j] = alpha * act(sum_k x[m, k] * Wg[j, k]) * (sum_k x[m, k] * Wu[j, k])
//   x: f16 [M, hidden_size], Wg, Wu: Q4_K [intermediate_size, hidden_size] (row j = hidden_size / 256 blocks),
//   out: f32 [M, intermediate_size]; act = silu (activation 0) or tanh-approximated gelu (activation 1).
//
// Q4_K block (256 weights, 144 bytes = 9 vec4<u32>): vec4 0 = f16 d | f16 dmin << 16, then the 12 packed 6-bit
// scale/min bytes; vec4 1..8 = nibbles, byte 32g + l holding weight 64g + l (low nibble, sub-block 2g) and
// 64g + 32 + l (high nibble, sub-block 2g + 1); weight = d * sc[j] * q - dmin * mn[j] (ggml get_scale_min_k4).
// hidden_size must be a multiple of 256; M and intermediate_size are arbitrary. Accumulation is f32.
//
// Entry points (workgroup_size(256, 1, 1); no subgroup operations, so any subgroup size is fine):
//   main (fused_ffn.q4k_f16a): 1 row of x per workgroup.
//   main_batched (fused_ffn.q4k_batched_f16a): 4 rows of x per workgroup.
// A workgroup computes 8 outputs j (32 lanes each) for its rows m0 .. m0 + rows - 1. Lane l of an output takes the
// 16-byte nibble slots (32 weights of one block) s = l, l + 32, ... of the gate and up rows: 8 consecutive lanes
// read one block contiguously. Per slot it loads the 32 matching activations of each row once and applies them to
// both matrices (the dmin * mn term uses the slot's activation sums). A tree in workgroup memory adds the lanes;
// lane 0 applies the activation and writes.
//
// Dispatch: tile t = workgroup_id.x + workgroup_id.y * num_workgroups.x (outputs 8t .. 8t + 7), rows
// m0 = workgroup_id.z * rows. With T = ceil(intermediate_size / 8): [min(T, 65535), ceil(T / 65535), ceil(M / rows)].
//
// Bindings (group 0):
//   0  uniforms      uniform             Uniforms (below)
//   1  input         storage, read       f16 [M, hidden_size] (read as vec4<f16>)
//   2  gate_weights  storage, read       Q4_K [intermediate_size, hidden_size / 256 blocks], as vec4<u32> words
//   3  up_weights    storage, read       Q4_K, same layout
//   4  output        storage, read_write f32 [M, intermediate_size] (written)
//
// Uniforms (the registry's `fused_ffn` base uniforms):
//   M: u32 @0, hidden_size: u32 @4, intermediate_size: u32 @8, alpha: f32 @12, activation: u32 @16

enable f16;

struct Uniforms {
  M: u32,
  hidden_size: u32,
  intermediate_size: u32,
  alpha: f32,
  activation: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read> gate_weights: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> up_weights: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;

const WG: u32 = 256u;
const LANES: u32 = 32u;    // invocations per output
const OUTS: u32 = 8u;      // outputs per workgroup
const BLOCK_V4: u32 = 9u;  // 144-byte block = 9 vec4<u32>
const SLOTS: u32 = 8u;     // 16-byte nibble slots per block
const BLOCK_A4: u32 = 64u; // 256 activations = 64 vec4

var<workgroup> red: array<vec4<f32>, 512>; // [0, 256): gate partial sums (over 4 rows), [256, 512): up

// Activations (vec4 index i) as f32.
fn a4(i: u32) -> vec4<f32> {
  return vec4<f32>(input[i]);
}

fn nib_lo(w: u32) -> vec4<f32> {
  return vec4<f32>(vec4<u32>(w, w >> 8u, w >> 16u, w >> 24u) & vec4<u32>(15u));
}

fn nib_hi(w: u32) -> vec4<f32> {
  return vec4<f32>(vec4<u32>(w >> 4u, w >> 12u, w >> 20u, w >> 28u) & vec4<u32>(15u));
}

// Contribution of one slot (nibble vec4 q of group g) of a block with header hdr: a[0..3] = the activations of the
// low nibbles, a[4..7] of the high ones, s_lo / s_hi their sums.
fn slot_dot(hdr: vec4<u32>, q: vec4<u32>, g: u32, a: array<vec4<f32>, 8>, s_lo: f32, s_hi: f32) -> f32 {
  let dm = unpack2x16float(hdr.x);
  var scw: u32;
  var mnw: u32;
  if (g < 2u) {
    scw = hdr.y & 0x3f3f3f3fu;
    mnw = hdr.z & 0x3f3f3f3fu;
  } else {
    scw = (hdr.w & 0x0f0f0f0fu) | ((hdr.y >> 2u) & 0x30303030u);
    mnw = ((hdr.w >> 4u) & 0x0f0f0f0fu) | ((hdr.z >> 2u) & 0x30303030u);
  }
  let sh = (g & 1u) * 16u;
  let sc = vec2<f32>(f32((scw >> sh) & 0xffu), f32((scw >> (sh + 8u)) & 0xffu));
  let mn = vec2<f32>(f32((mnw >> sh) & 0xffu), f32((mnw >> (sh + 8u)) & 0xffu));
  var lo = 0.0;
  var hi = 0.0;
  for (var k = 0u; k < 4u; k++) {
    lo += dot(nib_lo(q[k]), a[k]);
    hi += dot(nib_hi(q[k]), a[4u + k]);
  }
  return dm.x * (sc.x * lo + sc.y * hi) - dm.y * (mn.x * s_lo + mn.y * s_hi);
}

fn silu(x: f32) -> f32 {
  return x / (1.0 + exp(-x));
}

// 0.5 * x * (1 + tanh(z)) computed as x / (1 + exp(-2z)): no tanh, so no inf / inf = NaN for large |x| (exp
// overflows to +inf for very negative x: x / inf = -0, the limit).
fn gelu_tanh(x: f32) -> f32 {
  let c = 0.7978845608028654; // sqrt(2 / pi)
  return x / (1.0 + exp(-2.0 * c * (x + 0.044715 * x * x * x)));
}

// The whole computation for one workgroup (workgroup-uniform control flow: barriers inside).
fn ffn(tile: u32, z: u32, li: u32, rows: u32) {
  let I = u.intermediate_size;
  let j = tile * OUTS + li / LANES;
  let lane = li % LANES;
  let m0 = z * rows;
  let nb = u.hidden_size / 256u;
  let row4 = u.hidden_size / 4u; // vec4s per row of x
  var g = vec4<f32>(0.0); // gate sums of up to 4 rows
  var v = vec4<f32>(0.0); // up sums
  if (j < I) {
    for (var s = lane; s < nb * SLOTS; s += LANES) {
      let gb = s / SLOTS;
      let t = s % SLOTS;
      let base = (j * nb + gb) * BLOCK_V4;
      let hg = gate_weights[base];
      let qg = gate_weights[base + 1u + t];
      let hu = up_weights[base];
      let qu = up_weights[base + 1u + t];
      for (var r = 0u; r < rows; r++) {
        if (m0 + r < u.M) {
          let o = (m0 + r) * row4 + gb * BLOCK_A4 + (t >> 1u) * 16u + (t & 1u) * 4u;
          let a = array<vec4<f32>, 8>(a4(o), a4(o + 1u), a4(o + 2u), a4(o + 3u), a4(o + 8u), a4(o + 9u), a4(o + 10u), a4(o + 11u));
          let s_lo = dot(a[0] + a[1] + a[2] + a[3], vec4<f32>(1.0));
          let s_hi = dot(a[4] + a[5] + a[6] + a[7], vec4<f32>(1.0));
          g[r] += slot_dot(hg, qg, t >> 1u, a, s_lo, s_hi);
          v[r] += slot_dot(hu, qu, t >> 1u, a, s_lo, s_hi);
        }
      }
    }
  }
  red[li] = g;
  red[WG + li] = v;
  workgroupBarrier();
  for (var s = LANES / 2u; s > 0u; s >>= 1u) {
    if (lane < s) {
      red[li] += red[li + s];
      red[WG + li] += red[WG + li + s];
    }
    workgroupBarrier();
  }
  if (lane == 0u && j < I) {
    for (var r = 0u; r < rows; r++) {
      let m = m0 + r;
      if (m < u.M) {
        let gs = red[li][r];
        var act = silu(gs);
        if (u.activation != 0u) {
          act = gelu_tanh(gs);
        }
        output[m * I + j] = u.alpha * act * red[WG + li][r];
      }
    }
  }
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  ffn(wid.x + wid.y * nwg.x, wid.z, li, 1u);
}

@compute @workgroup_size(256, 1, 1)
fn main_batched(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  ffn(wid.x + wid.y * nwg.x, wid.z, li, 4u);
}
