// Generated from src/kernels/templates/rep_penalty.wgsl.jinja ({"logit":"f16","sfx":"_f16"}) by scripts/gen-sources.ts; do not edit.
// rep_penalty_f16.wgsl: HF repetition penalty (RepetitionPenaltyLogitsProcessor), in place on the logits before
// sampling.
//
// For each row r < R (R = max(batch_count, 1)) and each distinct token id t in row r's history (t < vocab_size):
//   x = logits[(batch_offset + r) * vocab_size + t]
//   x = x < 0 ? x * penalty : x / penalty
// Each distinct id is penalized once however often it repeats: invocation j handles history entry j and
// applies the penalty only if no earlier entry of the row holds the same id (the earlier entries are scanned in
// 256-entry chunks staged in workgroup memory), so every logit is read and written by one invocation only.
// History ids >= vocab_size (e.g. 0xffffffff padding of shorter histories) are ignored.
// batch_offset selects the first row to penalize in a larger logits buffer (e.g. the last row of a prefill).
//
// Entry point `main` (rep_penalty.default_f16), workgroup_size(256, 1, 1).
// Dispatch: [ceil(history_count / 256), max(batch_count, 1), 1] (workgroup_id.x = history chunk, .y = row).
//
// Bindings (group 0; the registry leaves them unnamed, so the binder knows them as uniforms, binding1..3):
//   0  uniforms  uniform             Uniforms (below)
//   1  binding1  storage, read_write logits f16 [rows, vocab_size] (rows batch_offset .. batch_offset + R - 1
//                                    are penalized in place; written)
//   2  binding2  storage, read       history u32 [R, history_count]: row r's previous token ids
//   3  binding3  storage, read       unused (bind any buffer of at least 4 bytes)
//
// Uniforms (the registry's `rep_penalty` base uniforms):
//   vocab_size: u32 @0, history_count: u32 @4, penalty: f32 @8, batch_count: u32 @12, batch_offset: u32 @16,
//   _pad0: u32 @20, _pad1: u32 @24, _pad2: u32 @28
//
// This is rep_penalty.wgsl with f16 logits (`logit_t` = f16; the penalty is computed in f32 and rounded back).
// Needs `shader-f16`. Keep the two files in sync: a test checks that their code differs only in `enable f16;`
// and `logit_t`.

enable f16;

alias logit_t = f16;

struct Uniforms {
  vocab_size: u32,
  history_count: u32,
  penalty: f32,
  batch_count: u32,
  batch_offset: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read_write> logits: array<logit_t>;
@group(0) @binding(2) var<storage, read> history: array<u32>;

const WG: u32 = 256u;
const NONE: u32 = 0xffffffffu;

var<workgroup> chunk: array<u32, WG>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let r = wid.y;
  if (r >= max(u.batch_count, 1u)) {
    return;
  }
  let n = u.history_count;
  let hbase = r * n;
  let j = wid.x * WG + li;
  var t = NONE;
  if (j < n) {
    t = history[hbase + j];
  }
  // First occurrence? Scan the entries before j, chunk by chunk (chunks 0 .. wid.x).
  var first = true;
  for (var c0 = 0u; c0 <= wid.x * WG; c0 += WG) {
    let k = c0 + li;
    var id = NONE;
    if (k < n) {
      id = history[hbase + k];
    }
    chunk[li] = id;
    workgroupBarrier();
    let lim = min(WG, j - min(j, c0)); // entries c0 .. j - 1 of this chunk
    for (var i = 0u; i < lim; i++) {
      if (chunk[i] == t) {
        first = false;
      }
    }
    workgroupBarrier();
  }
  if (first && t < u.vocab_size) {
    let at = (u.batch_offset + r) * u.vocab_size + t;
    let x = f32(logits[at]);
    logits[at] = logit_t(select(x / u.penalty, x * u.penalty, x < 0.0));
  }
}