// Generated from src/kernels/templates/lm_head_argmax.wgsl.jinja ({"weights":"q4k","phase1":"lm_head_argmax.phase1_q4k_f32a","phase2":"lm_head_argmax.phase2_q4k"}) by scripts/gen-sources.ts; do not edit.
// lm_head_argmax_q4k.wgsl: greedy decoding fused into the LM head: argmax_c logit(c) without writing the logits, Q4_K weights,
// f32 hidden state. Two passes; generated from the one lm_head_argmax template (f16 and Q4_K weights).
//
//   logit(c) = softcap(sum_k hidden[k] * W(c, k)), softcap(x) = logit_softcap * tanh(x / logit_softcap) when
//   logit_softcap > 0, else x; for c < vocab_size, c != pad_token_id (the pad token is never chosen).
//   W: Q4_K [vocab_size, hidden_size] (row c = hidden_size / 256 llama.cpp block_q4_K blocks of 144 bytes; hidden_size a
//   multiple of 256; transpose_b is not read: Q4_K rows are always vocab rows). Block: u32 word 0 = f16 d (low half) |
//   f16 dmin (high half), words 1..3 = the 12 packed 6-bit scale/min bytes, bytes 16 + 32g + l (g < 4, l < 32) hold
//   weight 64g + l (low nibble, sub-block 2g) and 64g + 32 + l (high nibble, sub-block 2g + 1);
//   weight = d * sc[j] * q - dmin * mn[j] for sub-block j (sc, mn: ggml get_scale_min_k4).
//   Ties go to the lower column (the result is deterministic).
//   phase1: group g (g < num_groups) covers columns 64g .. 64g + 63: temp_logits[g] = the best logit there (-3.402823e38
//           when none is valid), temp_indices[g] = its column.
//   phase2: output[output_index] = temp_indices of the best of the num_groups entries (ties to the lower column).
//   Other elements of output are not written; phase1 does not write output, phase2 writes no temp buffer.
//
// Entry points (workgroup_size(256, 1, 1)):
//   phase1 (variant lm_head_argmax.phase1_q4k_f32a): one workgroup per group of 64 columns, 4 invocations per column (each sums every
//          4th k), the 4 partial sums added in workgroup memory, then a tree argmax over the 64 columns. Accumulation
//          is f32. Group g = workgroup_id.x + workgroup_id.y * workgroups_x. With G = num_groups = ceil(vocab_size / 64):
//          dispatch [min(G, 65535), ceil(G / 65535), 1] and workgroups_x = min(G, 65535).
//   phase2 (variant lm_head_argmax.phase2_q4k): one workgroup; invocation i scans entries i, i + 256, ...; tree argmax.
//          Dispatch [1, 1, 1].
//
// Bindings (group 0):
//   0  uniforms      uniform             Uniforms (below)
//   1  hidden        storage, read       f32 [hidden_size]
//   2  weights       storage, read       Q4_K blocks
//   3  output        storage, read_write u32 [> output_index] (phase2 writes output[output_index])
//   4  temp_indices  storage, read_write u32 [num_groups] (phase1 writes, phase2 reads)
//   5  temp_logits   storage, read_write f32 [num_groups] (phase1 writes, phase2 reads)
//
// Uniforms (the registry's `lm_head_argmax` base uniforms, 32 bytes): vocab_size: u32 @0, hidden_size: u32 @4,
//   transpose_b: u32 @8, workgroups_x: u32 @12, pad_token_id: u32 @16, logit_softcap: f32 @20, output_index: u32 @24,
//   num_groups: u32 @28

struct Uniforms {
  vocab_size: u32,
  hidden_size: u32,
  transpose_b: u32,
  workgroups_x: u32,
  pad_token_id: u32,
  logit_softcap: f32,
  output_index: u32,
  num_groups: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> hidden: array<f32>;
@group(0) @binding(2) var<storage, read> weights: array<u32>;
@group(0) @binding(3) var<storage, read_write> output: array<u32>;
@group(0) @binding(4) var<storage, read_write> temp_indices: array<u32>;
@group(0) @binding(5) var<storage, read_write> temp_logits: array<f32>;

const WG: u32 = 256u;
const COLS: u32 = 64u;
const PER_COL: u32 = 4u;
const NEG: f32 = -3.402823e38;

var<workgroup> part: array<f32, 256>;
var<workgroup> best_v: array<f32, 256>;
var<workgroup> best_i: array<u32, 256>;

// Byte b of Q4_K block `blk` (a block is 36 u32 words).
fn q4k_byte(blk: u32, b: u32) -> u32 {
  return (weights[blk * 36u + (b >> 2u)] >> (8u * (b & 3u))) & 0xffu;
}

// W(c, k): weight k of row c.
fn weight(c: u32, k: u32) -> f32 {
  let blk = c * (u.hidden_size / 256u) + k / 256u;
  let w = k % 256u;
  let dm = unpack2x16float(weights[blk * 36u]);
  let j = w / 32u;
  var sc: u32;
  var mn: u32;
  if (j < 4u) {
    sc = q4k_byte(blk, 4u + j) & 63u;
    mn = q4k_byte(blk, 8u + j) & 63u;
  } else {
    sc = (q4k_byte(blk, 8u + j) & 15u) | ((q4k_byte(blk, j) >> 6u) << 4u);
    mn = (q4k_byte(blk, 8u + j) >> 4u) | ((q4k_byte(blk, 4u + j) >> 6u) << 4u);
  }
  let byte = q4k_byte(blk, 16u + 32u * (w / 64u) + (w % 32u));
  let q = select(byte & 15u, byte >> 4u, (w % 64u) >= 32u);
  return dm.x * f32(sc) * f32(q) - dm.y * f32(mn);
}
// (va, ia) before (vb, ib): larger value, ties to the lower index.
fn before(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
  return va > vb || (va == vb && ia < ib);
}

// Tree argmax over best_v / best_i [0, n) (n a power of two); the result is in slot 0. Uniform control flow only.
fn argmax_tree(li: u32, n: u32) {
  for (var s = n / 2u; s > 0u; s = s / 2u) {
    workgroupBarrier();
    if (li < s && before(best_v[li + s], best_i[li + s], best_v[li], best_i[li])) {
      best_v[li] = best_v[li + s];
      best_i[li] = best_i[li + s];
    }
  }
  workgroupBarrier();
}

@compute @workgroup_size(256, 1, 1)
fn phase1(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let g = wg.x + wg.y * u.workgroups_x;
  if (g >= u.num_groups) {
    return;
  }
  let cl = li / PER_COL;
  let part_k = li % PER_COL;
  let c = g * COLS + cl;
  let valid = c < u.vocab_size && c != u.pad_token_id;
  var sum = 0.0;
  if (valid) {
    for (var k = part_k; k < u.hidden_size; k += PER_COL) {
      sum += hidden[k] * weight(c, k);
    }
  }
  part[li] = sum;
  workgroupBarrier();
  if (li < COLS) {
    let cc = g * COLS + li;
    var logit = ((part[PER_COL * li] + part[PER_COL * li + 1u]) + part[PER_COL * li + 2u]) + part[PER_COL * li + 3u];
    if (u.logit_softcap > 0.0) {
      logit = u.logit_softcap * tanh(logit / u.logit_softcap);
    }
    best_v[li] = select(NEG, logit, cc < u.vocab_size && cc != u.pad_token_id);
    best_i[li] = cc;
  }
  argmax_tree(li, COLS);
  if (li == 0u) {
    temp_logits[g] = best_v[0];
    temp_indices[g] = best_i[0];
  }
}

@compute @workgroup_size(256, 1, 1)
fn phase2(@builtin(local_invocation_index) li: u32) {
  var bv = NEG;
  var bi = 0xffffffffu;
  for (var i = li; i < u.num_groups; i += WG) {
    let v = temp_logits[i];
    let c = temp_indices[i];
    if (bi == 0xffffffffu || before(v, c, bv, bi)) {
      bv = v;
      bi = c;
    }
  }
  best_v[li] = bv;
  best_i[li] = bi;
  argmax_tree(li, WG);
  if (li == 0u) {
    output[u.output_index] = best_i[0];
  }
}