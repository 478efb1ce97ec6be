// qmoe-output-zero-inter.wgsl (QMoE.OutputStageZeroInter, variant quant_zero_inter): QMoE output when the experts' inter size is 0.
//
// One invocation per output element idx < 192: output[idx] = 0 (every expert computes an empty
// FC2 sum; the contract selects this variant only when no FC2 bias is given).
// Dispatch: idx = (workgroup_id.y * num_workgroups.x + workgroup_id.x) * 64 + local x:
//   [min(ceil(N / 64), 65535), ceil(ceil(N / 64) / 65535), 1].
//
// Bindings (group 0):
//   0  output  storage, read_write  f32 [192] (written)
// No uniforms. Workgroup size: (64, 1, 1).

const N: u32 = 192u;
const WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> output: array<f32>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let idx = (wid.y * nwg.x + wid.x) * WG + lid;
  if (idx < N) {
    output[idx] = f32(0.0);
  }
}
