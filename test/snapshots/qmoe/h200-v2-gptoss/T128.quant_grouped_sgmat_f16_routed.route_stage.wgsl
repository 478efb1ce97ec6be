// qmoe-route-stage.wgsl (QMoE.RouteStage, variant quant_grouped_sgmat_f16_routed): QMoE routing, top-k experts per token.
//
// One invocation per token t < params.tokenCount (E = 32 experts, k = 4):
//   route_expert[t*k + j] = the j-th largest router logit's expert, best first; equal logits: the higher expert
//                           index first (ONNX Runtime: std::partial_sort over (logit, index) with std::greater)
//   route_mix[t*k + j]    = exp(l_j - l_0) / sum_j' exp(l_j' - l_0)  (softmax over the k selected logits only;
//                           0 when not > 1e-8: ORT skips such routes)
// Dispatch: t = (workgroup_id.y * num_workgroups.x + workgroup_id.x) * 64 + local x:
//   [min(ceil(T / 64), 65535), ceil(ceil(T / 64) / 65535), 1].
//
// Bindings (group 0):
//   0  router_probs  storage, read        f32 [T, E] router logits
//   1  route_expert  storage, read_write  u32 [T, k] (written)
//   2  route_mix     storage, read_write  f32 [T, k] (written)
//   3  params        uniform             Params (below)
// Workgroup size: (64, 1, 1).

struct Params {
  tokenCount: u32,
}

const E: u32 = 32u;
const K: u32 = 4u;
const WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> router_probs: array<f32>;
@group(0) @binding(1) var<storage, read_write> route_expert: array<u32>;
@group(0) @binding(2) var<storage, read_write> route_mix: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let t = (wid.y * nwg.x + wid.x) * WG + lid;
  if (t >= params.tokenCount) {
    return;
  }
  let base = t * E;
  var logits: array<f32, K>;
  var picked: array<u32, K>;
  // Selection by rank: pick j is the best (logit, index) pair ranked behind pick j - 1.
  var prevV = 0.0;
  var prevE = 0u;
  for (var j = 0u; j < K; j++) {
    var found = false;
    var bestV = 0.0;
    var bestE = 0u;
    for (var e = 0u; e < E; e++) {
      let v = f32(router_probs[base + e]);
      let behind = j == 0u || v < prevV || (v == prevV && e < prevE);
      let ahead = !found || v > bestV || (v == bestV && e > bestE);
      if (behind && ahead) {
        found = true;
        bestV = v;
        bestE = e;
      }
    }
    logits[j] = bestV;
    picked[j] = bestE;
    prevV = bestV;
    prevE = bestE;
  }
  var sum = 0.0;
  for (var j = 0u; j < K; j++) {
    sum += exp(logits[j] - logits[0]);
  }
  for (var j = 0u; j < K; j++) {
    var w = exp(logits[j] - logits[0]) / sum;
    if (!(w > 1e-8)) {
      w = 0.0;
    }
    route_expert[t * K + j] = picked[j];
    route_mix[t * K + j] = w;
  }
}
