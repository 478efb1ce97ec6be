// qmoe-output-gemv.wgsl (QMoE.OutputStageGemv, variant quant_gemv_routed): QMoE FC2 and the routed mix for a few tokens.
//
// Workgroup (x = 8 lanes, y = 8 rows). Row y of workgroup (wx, wy) computes hidden output
// r = wx * 8 + y (r < H) of chunk token u = wy, token t = params.tokenOffset + u (k = 2, H = 64, I = 32):
//   output[t][r] = sum_j route_mix[t*k + j] * (sum_c W2[e_j][r][c] * hidden_act[u*k + j][c] + fc2_bias[e_j][r]),  e_j = route_expert[t*k + j]
//   W2[e][r][c] = (q - 128) * scale, 8-bit, scale per row.
// Routes with route_mix == 0 are skipped (ORT skips weights not > 1e-8).
// Lane l reads 16-byte chunks l, l + 8, ... of each routed expert's row (2 chunks of 16 weights,
// coalesced); each routed expert's rows are read once per token; activations are read as vec4.
// f32 partial sums per lane (all routes), then one row reduction: subgroupAdd (subgroups of 4 consecutive invocations).
// Dispatch: [ceil(H / 8), chunk tokens, 1].
//
// Bindings (group 0):
//   0  hidden_act           storage, read        f32 [chunk tokens * k, I]
//   1  route_expert         storage, read        u32 [T, k]
//   2  route_mix            storage, read        f32 [T, k]
//   3  fc2_experts_weights  storage, read        u8 [E, 64, 32] as u32 words
//   4  fc2_scales           storage, read        f32 [E, 64]
//   5  fc2_bias             storage, read        f32 [E, 64]
//   6  output               storage, read_write  f32 [T, H] (written)
//   7  params               uniform             Params (below)
// Workgroup size: (8, 8, 1).
enable subgroups;

struct Params {
  tokenOffset: u32,
}

const K: u32 = 2u;
const H: u32 = 64u;
const I: u32 = 32u;
const MID: f32 = 128.0;
const LANES: u32 = 8u;
const WG_ROWS: u32 = 8u;
const VPR: u32 = 2u; // vec4<u32> (16 bytes, 16 weights) per weight row

@group(0) @binding(0) var<storage, read> hidden_act: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> route_expert: array<u32>;
@group(0) @binding(2) var<storage, read> route_mix: array<f32>;
@group(0) @binding(3) var<storage, read> fc2_experts_weights: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> fc2_scales: array<f32>;
@group(0) @binding(5) var<storage, read> fc2_bias: array<f32>;
@group(0) @binding(6) var<storage, read_write> output: array<f32>;
@group(0) @binding(7) var<uniform> params: Params;

var<workgroup> partial: array<f32, 64>;

// sum_v (q_v - MID) * a_v over the 4 weights of one u32 word.
fn dot_word(q: u32, a: vec4<f32>) -> f32 {
  return dot(vec4<f32>(unpack4xU8(q)) - MID, a);
}

@compute @workgroup_size(8, 8, 1)
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
        var s = 0.0;
        {
          let w = v * 4u + 0u;
          let d = dot_word(q.x, hidden_act[a_base + w]);

          s += d;
        }
        {
          let w = v * 4u + 1u;
          let d = dot_word(q.y, hidden_act[a_base + w]);

          s += d;
        }
        {
          let w = v * 4u + 2u;
          let d = dot_word(q.z, hidden_act[a_base + w]);

          s += d;
        }
        {
          let w = v * 4u + 3u;
          let d = dot_word(q.w, hidden_act[a_base + w]);

          s += d;
        }
        part += s;
      }
      acc += mix * fc2_scales[row] * part;
    }
  }

  // Row reduction over the 8 lanes.
  let sum = subgroupAdd(acc);
  const SG: u32 = 4u;
  if (lane % SG == 0u) {
    partial[lid3.y * (LANES / SG) + lane / SG] = sum;
  }
  workgroupBarrier();
  var total = 0.0;
  for (var g = 0u; g < LANES / SG; g++) {
    total += partial[lid3.y * (LANES / SG) + g];
  }

  if (lane == 0u && live) {
    var y = total;
    for (var j = 0u; j < K; j++) {
      y += route_mix[t * K + j] * f32(fc2_bias[route_expert[t * K + j] * H + r]);
    }
    output[t * H + r] = f32(y);
  }
}
