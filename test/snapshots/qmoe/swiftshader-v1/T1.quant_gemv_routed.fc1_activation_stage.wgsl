// qmoe-fc1-activation-gemv.wgsl (QMoE.FC1ActivationStageGemv, variant quant_gemv_routed): QMoE FC1 + activation for a few tokens.
//
// Workgroup (x = 4 lanes, y = 16 rows). Row y of workgroup (wx, wy) computes activation output
// i = wx * 16 + y (i < I) of slot s = wy: route s % k of token t = params.tokenOffset + s / k, expert
// e = route_expert[t*k + s % k] (k = 2, H = 64, I = 32):
//   h(r) = sum_c W1[e][r][c] * input[t][c],   W1[e][r][c] = (q - 8) * scale
//   hidden_act[s][i] = gate * sigmoid(alpha * gate) * (linear + beta), gate = h(2i), linear = h(2i + 1)
//                      with gate = min(gate, 7), linear = clamp(linear, -7, 7)
// q: 4-bit, low nibble first; scale per block of 16 columns.
// Lane l reads 16-byte chunks l, l + 4, ... of the row (2 chunks of 32 weights): the lanes of a row
// read consecutive chunks (coalesced, 16 bytes per load); the gate and linear rows share the input loads; each routed expert's rows
// are read once per token. The input is read as vec4.
// f32 partial sums per lane, then a row reduction: a tree in workgroup memory.
// Dispatch: [ceil(I / 16), chunk tokens * k, 1].
//
// Bindings (group 0):
//   0  input                storage, read        f32 [T, H]
//   1  route_expert         storage, read        u32 [T, k]
//   2  fc1_experts_weights  storage, read        u8 [E, 64, 32] as u32 words
//   3  fc1_scales           storage, read        f32 [E, 64, 4]
//   4  hidden_act           storage, read_write  f32 [chunk tokens * k, I] (written)
//   5  params               uniform             Params (below)
// Workgroup size: (4, 16, 1).

struct Params {
  activationAlpha: f32,
  activationBeta: f32,
  tokenOffset: u32,
}

const K: u32 = 2u;
const H: u32 = 64u;
const I: u32 = 32u;
const ROWS: u32 = 64u;
const MID: f32 = 8.0;
const LANES: u32 = 4u;
const WG_ROWS: u32 = 16u;
const VPR: u32 = 2u; // vec4<u32> (16 bytes, 32 weights) per weight row

@group(0) @binding(0) var<storage, read> input: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> route_expert: array<u32>;
@group(0) @binding(2) var<storage, read> fc1_experts_weights: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> fc1_scales: array<f32>;
@group(0) @binding(4) var<storage, read_write> hidden_act: array<f32>;
@group(0) @binding(5) var<uniform> params: Params;

var<workgroup> partial: array<vec2<f32>, 64>;

// sum_v (q_v - MID) * x_v over the 8 weights of one u32 word.
fn dot_word(q: u32, x_even: vec4<f32>, x_odd: vec4<f32>) -> f32 {
  // Nibbles 0, 2, 4, 6 are the low nibbles of the word's bytes; 1, 3, 5, 7 the high ones.
  let q_even = vec4<f32>(unpack4xU8(q & 0x0F0F0F0Fu)) - MID;
  let q_odd = vec4<f32>(unpack4xU8((q >> 4u) & 0x0F0F0F0Fu)) - MID;
  return dot(q_even, x_even) + dot(q_odd, x_odd);
}

@compute @workgroup_size(4, 16, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let lane = lid3.x;
  let i = wid.x * WG_ROWS + lid3.y;
  let slot = wid.y;
  let e = route_expert[params.tokenOffset * K + slot];
  let t = params.tokenOffset + slot / K;
  let live = i < I;
  let row0 = e * ROWS + 2u * i; // gate
  let row1 = row0 + 1u; // linear
  var acc0 = 0.0;
  var acc1 = 0.0;
  if (live) {
    let x_base = t * 16u;
    for (var v = lane; v < VPR; v += LANES) {
      let q0 = fc1_experts_weights[row0 * VPR + v];
      let q1 = fc1_experts_weights[row1 * VPR + v];
      {
        let w = v * 4u + 0u;
        let xa = vec4<f32>(input[x_base + 2u * w]);
        let xb = vec4<f32>(input[x_base + 2u * w + 1u]);
        let x_even = vec4<f32>(xa.x, xa.z, xb.x, xb.z);
        let x_odd = vec4<f32>(xa.y, xa.w, xb.y, xb.w);
        let d0 = dot_word(q0.x, x_even, x_odd);
        let d1 = dot_word(q1.x, x_even, x_odd);

        let blk = (w * 8u) / 16u;
        acc0 += d0 * fc1_scales[row0 * 4u + blk];
        acc1 += d1 * fc1_scales[row1 * 4u + blk];
      }
      {
        let w = v * 4u + 1u;
        let xa = vec4<f32>(input[x_base + 2u * w]);
        let xb = vec4<f32>(input[x_base + 2u * w + 1u]);
        let x_even = vec4<f32>(xa.x, xa.z, xb.x, xb.z);
        let x_odd = vec4<f32>(xa.y, xa.w, xb.y, xb.w);
        let d0 = dot_word(q0.y, x_even, x_odd);
        let d1 = dot_word(q1.y, x_even, x_odd);

        let blk = (w * 8u) / 16u;
        acc0 += d0 * fc1_scales[row0 * 4u + blk];
        acc1 += d1 * fc1_scales[row1 * 4u + blk];
      }
      {
        let w = v * 4u + 2u;
        let xa = vec4<f32>(input[x_base + 2u * w]);
        let xb = vec4<f32>(input[x_base + 2u * w + 1u]);
        let x_even = vec4<f32>(xa.x, xa.z, xb.x, xb.z);
        let x_odd = vec4<f32>(xa.y, xa.w, xb.y, xb.w);
        let d0 = dot_word(q0.z, x_even, x_odd);
        let d1 = dot_word(q1.z, x_even, x_odd);

        let blk = (w * 8u) / 16u;
        acc0 += d0 * fc1_scales[row0 * 4u + blk];
        acc1 += d1 * fc1_scales[row1 * 4u + blk];
      }
      {
        let w = v * 4u + 3u;
        let xa = vec4<f32>(input[x_base + 2u * w]);
        let xb = vec4<f32>(input[x_base + 2u * w + 1u]);
        let x_even = vec4<f32>(xa.x, xa.z, xb.x, xb.z);
        let x_odd = vec4<f32>(xa.y, xa.w, xb.y, xb.w);
        let d0 = dot_word(q0.w, x_even, x_odd);
        let d1 = dot_word(q1.w, x_even, x_odd);

        let blk = (w * 8u) / 16u;
        acc0 += d0 * fc1_scales[row0 * 4u + blk];
        acc1 += d1 * fc1_scales[row1 * 4u + blk];
      }
    }
  }

  // Row reduction over the 4 lanes.
  partial[tid] = vec2<f32>(acc0, acc1);
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
    var h0 = total.x;
    var h1 = total.y;
    h0 = min(h0, f32(7));
    h1 = clamp(h1, -f32(7), f32(7));
    hidden_act[slot * I + i] = h0 / (1.0 + exp(-params.activationAlpha * h0)) * (h1 + params.activationBeta);
  }
}
