// Generated from src/kernels/templates/moe_gather.wgsl.jinja ({"variant":"moe_gather.single_pass","entry":"gather_single_pass","wg":256}) by scripts/gen-sources.ts; do not edit.
// moe_gather.wgsl: tokens gathered by expert in one pass (rows of the tokens routed to each expert, packed per expert).
//
//   T = num_tokens, K = top_k, E = num_experts, M = max_tokens_per_expert, H = hidden_size.
//   Routing slots s = t * K + j are visited in order (token-major: t ascending, then j); slot i of expert e is the
//   i-th slot s whose expert_assignments[s] == e. For e < E, i < M, h < H:
//     output[(e * M + i) * H + h] = input[t * H + h]   (t: the token of that slot)
//     output[(e * M + i) * H + h] = 0                  when expert e has fewer than i + 1 slots
//   Slots past the first M of an expert are dropped; assignments >= E are ignored.
// This entry point writes neither per-expert counts nor a token map: the registry gives moe_gather no binding for
// them (the count_and_map / gather_tokens pair, which would, is listed in src/selftest/not-recoverable.json).
//
// Entry point `gather_single_pass` (variant moe_gather.single_pass), workgroup_size(256, 1, 1).
// One workgroup per expert (e = workgroup_id.x; dispatch [E, 1, 1], E <= 65535). The slots are found 256 at a time:
// invocation 0 continues its scan of expert_assignments and records the tokens of the next 256 slots in workgroup
// memory; then the workgroup copies those rows (256 invocations stride over slot-major elements).
//
// Bindings (group 0):
//   0  uniforms            uniform             Uniforms (below)
//   1  input               storage, read       f32 [T, H]
//   2  expert_assignments  storage, read       u32 [T, K]
//   3  output              storage, read_write f32 [E, M, H] (written)
//
// Uniforms (the registry's `moe_gather` base uniforms, 32 bytes): num_tokens: u32 @0, hidden_size: u32 @4,
//   num_experts: u32 @8, top_k: u32 @12, max_tokens_per_expert: u32 @16, threads_per_row: u32 @20 (not read: one
//   workgroup per expert), _pad2, _pad3

struct Uniforms {
  num_tokens: u32,
  hidden_size: u32,
  num_experts: u32,
  top_k: u32,
  max_tokens_per_expert: u32,
  threads_per_row: u32,
  _pad2: u32,
  _pad3: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read> expert_assignments: array<u32>;
@group(0) @binding(3) var<storage, read_write> output: array<f32>;

const WG: u32 = 256u;

var<workgroup> slot_token: array<u32, 256>;
var<workgroup> found_sh: u32;
var<workgroup> next_sh: u32;

@compute @workgroup_size(256, 1, 1)
fn gather_single_pass(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let e = wg.x;
  if (e >= u.num_experts) {
    return;
  }
  let H = u.hidden_size;
  let M = u.max_tokens_per_expert;
  let slots = u.num_tokens * u.top_k;
  if (li == 0u) {
    next_sh = 0u;
  }
  for (var c0 = 0u; c0 < M; c0 += WG) {
    workgroupBarrier();
    if (li == 0u) {
      // the next min(WG, M - c0) slots of expert e, from where the previous chunk stopped
      var s = next_sh;
      var n = 0u;
      let want = min(WG, M - c0);
      for (; s < slots && n < want; s++) {
        if (expert_assignments[s] == e) {
          slot_token[n] = s / u.top_k;
          n++;
        }
      }
      next_sh = s;
      found_sh = n;
    }
    let n = workgroupUniformLoad(&found_sh);
    let rows = min(WG, M - c0);
    for (var x = li; x < rows * H; x += WG) {
      let i = x / H;
      let h = x - i * H;
      var v = 0.0;
      if (i < n) {
        v = input[slot_token[i] * H + h];
      }
      output[(e * M + c0 + i) * H + h] = v;
    }
  }
}