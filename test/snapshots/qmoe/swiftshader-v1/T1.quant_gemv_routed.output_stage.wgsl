// qmoe-output-gemv.wgsl (QMoE.OutputStageGemv, variant quant_gemv_routed): QMoE FC2 and the routed mix for a few tokens.
//
// Workgroup (x = 4 lanes, y = 16 rows). Row y of workgroup (wx, wy) computes hidden output
// r = wx * 16 + y (r < H) of chunk token u = wy, token t = params.tokenOffset + u (k = 2, H = 64, I = 32):
//   output[t][r] = sum_j route_mix[t*k + j] * (sum_c W2[e_j][r][c] * hidden_act[u*k + j][c]),  e_j = route_expert[t*k + j]
//   W2[e][r][c] = (q - 8) * scale, 4-bit (low nibble first), scale per block of 16 columns.
// Routes with route_mix == 0 are skipped (ORT skips weights not > 1e-8).
// Lane l reads 16-byte chunks l, l + 4, ... of each routed expert's row (1 chunks of 32 weights,
// coalesced); each routed expert's rows are read once per token; activations are read as vec4.
// f32 partial sums per lane (all routes), then one row reduction: a tree in workgroup memory.
// Dispatch: [ceil(H / 16), chunk tokens, 1].
//
// Bindings (group 0):
//   0  hidden_act           storage, read        f32 [chunk tokens * k, I]
//   1  route_expert         storage, read        u32 [T, k]
//   2  route_mix            storage, read        f32 [T, k]
//   3  fc2_experts_weights  storage, read        u8 [E, 64, 16] as u32 words
//   4  fc2_scales           storage, read        f32 [E, 64, 2]
//   5  output               storage, read_write  f32 [T, H] (written)
//   6  params               uniform             Params (below)
// Workgroup size: (4, 16, 1).

struct Params {
  tokenOffset: u32,
}

const K: u32 = 2u;
const H: u32 = 64u;
const I: u32 = 32u;
const MID: f32 = 8.0;
const LANES: u32 = 4u;
const WG_ROWS: u32 = 16u;
const VPR: u32 = 1u; // vec4<u32> (16 bytes, 32 weights) per weight row

@group(0) @binding(0) var<storage, read> hidden_act: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> route_expert: array<u32>;
@group(0) @binding(2) var<storage, read> route_mix: array<f32>;
@group(0) @binding(3) var<storage, read> fc2_experts_weights: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> fc2_scales: array<f32>;
@group(0) @binding(5) var<storage, read_write> output: array<f32>;
@group(0) @binding(6) var<uniform> params: Params;

var<workgroup> partial: array<f32, 64>;

// sum_v (q_v - MID) * a_v over the 8 weights of one u32 word.
fn dot_word(q: u32, a_even: vec4<f32>, a_odd: vec4<f32>) -> f32 {
  // Nibbles 0, 2, 4, 6 are the low nibbles of the word's bytes; 1, 3, 5, 7 the high ones.
  let q_even = vec4<f32>(unpack4xU8(q & 0x0F0F0F0Fu)) - MID;
  let q_odd = vec4<f32>(unpack4xU8((q >> 4u) & 0x0F0F0F0Fu)) - MID;
  return dot(q_even, a_even) + dot(q_odd, a_odd);
}

@compute @workgroup_size(4, 16, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let lane = lid3.x;
  let r = wid.x * WG_ROWS + lid3.y;
  let u = wid.y;
  let t = params.tokenOffset + u;
  let live = r < H;
  var acc = 0.0;
  if (live) {
    for (var j = 0u; j < K; j++) {
      let mix = route_mix[t * K + j];
      if (mix == 0.0) {
        continue;
      }
      let row = route_expert[t * K + j] * H + r;
      var part = 0.0;
      let a_base = (u * K + j) * 8u;
      for (var v = lane; v < VPR; v += LANES) {
        let q = fc2_experts_weights[row * VPR + v];
        {
          let w = v * 4u + 0u;
          let aa = hidden_act[a_base + 2u * w];
          let ab = hidden_act[a_base + 2u * w + 1u];
          let d = dot_word(q.x, vec4<f32>(aa.x, aa.z, ab.x, ab.z), vec4<f32>(aa.y, aa.w, ab.y, ab.w));

          part += d * fc2_scales[row * 2u + (w * 8u) / 16u];
        }
        {
          let w = v * 4u + 1u;
          let aa = hidden_act[a_base + 2u * w];
          let ab = hidden_act[a_base + 2u * w + 1u];
          let d = dot_word(q.y, vec4<f32>(aa.x, aa.z, ab.x, ab.z), vec4<f32>(aa.y, aa.w, ab.y, ab.w));

          part += d * fc2_scales[row * 2u + (w * 8u) / 16u];
        }
        {
          let w = v * 4u + 2u;
          let aa = hidden_act[a_base + 2u * w];
          let ab = hidden_act[a_base + 2u * w + 1u];
          let d = dot_word(q.z, vec4<f32>(aa.x, aa.z, ab.x, ab.z), vec4<f32>(aa.y, aa.w, ab.y, ab.w));

          part += d * fc2_scales[row * 2u + (w * 8u) / 16u];
        }
        {
          let w = v * 4u + 3u;
          let aa = hidden_act[a_base + 2u * w];
          let ab = hidden_act[a_base + 2u * w + 1u];
          let d = dot_word(q.w, vec4<f32>(aa.x, aa.z, ab.x, ab.z), vec4<f32>(aa.y, aa.w, ab.y, ab.w));

          part += d * fc2_scales[row * 2u + (w * 8u) / 16u];
        }
      }
      acc += mix * part;
    }
  }

  // Row reduction over the 4 lanes.
  partial[tid] = acc;
  workgroupBarrier();
  for (var n = LANES; n > 1u; n = (n + 1u) / 2u) {
    let h2 = (n + 1u) / 2u;
    if (lane < n - h2) {
      partial[tid] += partial[tid + h2];
    }
    workgroupBarrier();
  }
  let total = partial[tid];

  if (lane == 0u && live) {
    var y = total;
    output[t * H + r] = f32(y);
  }
}
