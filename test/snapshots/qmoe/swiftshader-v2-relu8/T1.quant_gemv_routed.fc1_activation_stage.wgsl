// qmoe-fc1-activation-gemv.wgsl (QMoE.FC1ActivationStageGemv, variant quant_gemv_routed): QMoE FC1 + activation for a few tokens.
//
// Workgroup (x = 8 lanes, y = 8 rows). Row y of workgroup (wx, wy) computes activation output
// i = wx * 8 + y (i < I) of slot s = wy: route s % k of token t = params.tokenOffset + s / k, expert
// e = route_expert[t*k + s % k] (k = 2, H = 64, I = 32):
//   h(r) = sum_c W1[e][r][c] * input[t][c] + fc1_bias[e][r],   W1[e][r][c] = (q - 128) * scale
//   hidden_act[s][i] = max(h(i), 0)
// q: 8-bit; scale per row (applied once to the row's sum).
// Lane l reads 16-byte chunks l, l + 8, ... of the row (4 chunks of 16 weights): the lanes of a row
// read consecutive chunks (coalesced, 16 bytes per load); each routed expert's rows
// are read once per token. The input is read as vec4.
// f32 partial sums per lane, then a row reduction: subgroupAdd (subgroups of 4 consecutive invocations; 8 lanes = 2 subgroup(s) per row).
// Dispatch: [ceil(I / 8), chunk tokens * k, 1].
//
// Bindings (group 0):
//   0  input                storage, read        f32 [T, H]
//   1  route_expert         storage, read        u32 [T, k]
//   2  fc1_experts_weights  storage, read        u8 [E, 32, 64] as u32 words
//   3  fc1_scales           storage, read        f32 [E, 32]
//   4  fc1_bias             storage, read        f32 [E, 32]
//   5  hidden_act           storage, read_write  f32 [chunk tokens * k, I] (written)
//   6  params               uniform             Params (below)
// Workgroup size: (8, 8, 1).
enable subgroups;

struct Params {
  activationAlpha: f32,
  activationBeta: f32,
  tokenOffset: u32,
}

const K: u32 = 2u;
const H: u32 = 64u;
const I: u32 = 32u;
const ROWS: u32 = 32u;
const MID: f32 = 128.0;
const LANES: u32 = 8u;
const WG_ROWS: u32 = 8u;
const VPR: u32 = 4u; // vec4<u32> (16 bytes, 16 weights) per weight row

@group(0) @binding(0) var<storage, read> input: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> route_expert: array<u32>;
@group(0) @binding(2) var<storage, read> fc1_experts_weights: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> fc1_scales: array<f32>;
@group(0) @binding(4) var<storage, read> fc1_bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> hidden_act: array<f32>;
@group(0) @binding(6) var<uniform> params: Params;

var<workgroup> partial: array<vec2<f32>, 64>;

// sum_v (q_v - MID) * x_v over the 4 weights of one u32 word.
fn dot_word(q: u32, x: vec4<f32>) -> f32 {
  return dot(vec4<f32>(unpack4xU8(q)) - MID, x);
}

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let lane = lid3.x;
  let i = wid.x * WG_ROWS + lid3.y;
  let slot = wid.y;
  let e = route_expert[params.tokenOffset * K + slot];
  let t = params.tokenOffset + slot / K;
  let live = i < I;
  let row0 = e * ROWS + i;
  var acc0 = 0.0;
  var acc1 = 0.0;
  if (live) {
    let x_base = t * 16u;
    for (var v = lane; v < VPR; v += LANES) {
      let q0 = fc1_experts_weights[row0 * VPR + v];
      var s0 = 0.0;
      var s1 = 0.0;
      {
        let w = v * 4u + 0u;
        let x = vec4<f32>(input[x_base + w]);
        let d0 = dot_word(q0.x, x);

        s0 += d0;
      }
      {
        let w = v * 4u + 1u;
        let x = vec4<f32>(input[x_base + w]);
        let d0 = dot_word(q0.y, x);

        s0 += d0;
      }
      {
        let w = v * 4u + 2u;
        let x = vec4<f32>(input[x_base + w]);
        let d0 = dot_word(q0.z, x);

        s0 += d0;
      }
      {
        let w = v * 4u + 3u;
        let x = vec4<f32>(input[x_base + w]);
        let d0 = dot_word(q0.w, x);

        s0 += d0;
      }
      acc0 += s0;
      acc1 += s1;
    }
  }

  // Row reduction over the 8 lanes.
  let sum = vec2<f32>(subgroupAdd(acc0), subgroupAdd(acc1));
  const SG: u32 = 4u;
  if (lane % SG == 0u) {
    partial[lid3.y * (LANES / SG) + lane / SG] = sum;
  }
  workgroupBarrier();
  var total = vec2<f32>(0.0);
  for (var g = 0u; g < LANES / SG; g++) {
    total += partial[lid3.y * (LANES / SG) + g];
  }

  if (lane == 0u && live) {
    var h0 = total.x * fc1_scales[row0];
    h0 += f32(fc1_bias[row0]);
    hidden_act[slot * I + i] = max(h0, 0.0);
  }
}
