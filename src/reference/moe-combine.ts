/**
 * CPU references of the MoE routing-side registry kernels: `scatter_add` (combine expert outputs into token rows),
 * `moe_offsets` (routing slot -> expert output row) and the row-split embedding lookups `gather_split4` /
 * `gather_split8`. Semantics: the headers of src/kernels/templates/scatter_add.wgsl.jinja,
 * moe_offsets.wgsl.jinja and gather_split.wgsl.jinja. Parameters use the registry's uniform field names; f16
 * tensors arrive as u32 words holding two f16 each (low half first) and are widened here. Math in f64.
 */
import { f16BytesToF32 } from '../formats/f16.ts';

export interface ScatterAddUniforms {
  num_tokens: number;
  hidden_size: number;
  top_k: number;
  num_experts: number;
}

/** f32 values, or f16 values packed two per u32 word widened to f32. */
export function widen(v: Float32Array | Uint32Array): Float32Array {
  return v instanceof Uint32Array ? f16BytesToF32(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)) : v;
}

export interface ScatterAddInputs {
  /** dense: [num_experts, num_tokens, hidden]; dynamic: [rows, hidden] */
  input: ArrayLike<number>;
  indices: ArrayLike<number>;
  weights: ArrayLike<number>;
  /** dynamic layout: input row of each routing slot */
  tokenOffsets?: ArrayLike<number>;
  /** per-expert factor on the routing weight */
  expertScales?: ArrayLike<number>;
  /** scatter_add_accumulate: the output's previous contents (the sum is added to them) */
  accumulate?: ArrayLike<number>;
}

/**
 * output[t, h] (+)= sum_j w(t, j) * input[row(t, j), h] with slot s = t * top_k + j, e = indices[s],
 * w = weights[s] (* expertScales[e]), row = tokenOffsets[s] (dynamic) or e * num_tokens + t (dense);
 * slots with e >= num_experts contribute nothing.
 */
export function scatterAddRef(x: ScatterAddInputs, u: ScatterAddUniforms): Float64Array {
  const { num_tokens: T, hidden_size: H, top_k: K, num_experts: E } = u;
  const out = new Float64Array(T * H);
  if (x.accumulate) for (let i = 0; i < out.length; i++) out[i] = x.accumulate[i]!;
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < K; j++) {
      const s = t * K + j;
      const e = x.indices[s]!;
      if (e >= E) continue;
      const w = x.weights[s]! * (x.expertScales ? x.expertScales[e]! : 1);
      const row = x.tokenOffsets ? x.tokenOffsets[s]! : e * T + t;
      for (let h = 0; h < H; h++) out[t * H + h] += w * x.input[row * H + h]!;
    }
  }
  return out;
}

export interface MoeOffsetsUniforms {
  num_tokens: number;
  num_experts: number;
  top_k: number;
  max_tokens_per_expert: number;
}

/**
 * moe_offsets: for every expert e and slot i < min(token_counts[e], max_tokens_per_expert), with (t, j) =
 * token_map[(e * max + i) * 2 ..+ 2]: token_offsets[t * top_k + j] = e * max + i when t < num_tokens and j < top_k.
 * Other elements keep `previous` (the kernel writes only routed slots).
 */
export function moeOffsetsRef(counts: ArrayLike<number>, map: ArrayLike<number>, previous: ArrayLike<number>, u: MoeOffsetsUniforms): Float64Array {
  const out = Float64Array.from(previous);
  const M = u.max_tokens_per_expert;
  for (let e = 0; e < u.num_experts; e++) {
    const n = Math.min(counts[e]!, M);
    for (let i = 0; i < n; i++) {
      const t = map[(e * M + i) * 2]!;
      const j = map[(e * M + i) * 2 + 1]!;
      if (t < u.num_tokens && j < u.top_k) out[t * u.top_k + j] = e * M + i;
    }
  }
  return out;
}

export interface GatherSplitUniforms {
  num_tokens: number;
  hidden_size: number;
  vocab_size: number;
  index_offset: number;
  input_hidden_size: number;
  hidden_offset: number;
  [section: `section${number}_rows`]: number;
}

/**
 * gather_split4/8: id = indices[index_offset + t]; the table is split by rows into sections (section k holds rows
 * start_k .. start_k + section{k}_rows - 1, start_k the sum of the earlier sections' rows);
 * output[t, h] = tables[k][(id - start_k) * input_hidden_size + hidden_offset + h]; ids >= vocab_size, or past the
 * last section, give 0.
 */
export function gatherSplitRef(indices: ArrayLike<number>, tables: readonly ArrayLike<number>[], u: GatherSplitUniforms): Float64Array {
  const H = u.hidden_size;
  const out = new Float64Array(u.num_tokens * H);
  for (let t = 0; t < u.num_tokens; t++) {
    const id = indices[u.index_offset + t]!;
    if (id >= u.vocab_size) continue;
    let start = 0;
    for (let k = 0; k < tables.length; k++) {
      const rows = u[`section${k}_rows`] ?? 0;
      if (id < start + rows) {
        const base = (id - start) * u.input_hidden_size + u.hidden_offset;
        for (let h = 0; h < H; h++) out[t * H + h] = tables[k]![base + h]!;
        break;
      }
      start += rows;
    }
  }
  return out;
}

/** topk value modes: the input values, softmax over the row, softmax over the k selected (GPT-OSS routing weights). */
export type TopkMode = 'values' | 'softmax' | 'softmax_selected';

/**
 * Top-k of each row of `input` ([rows, size]): the k first elements in the order "larger value first, ties to the
 * lower column" (indices), and per mode their values, softmax over the row (exp(x - max) / sum over the row, not
 * renormalized), or softmax over the k selected (exp(x_j - x_0) / sum_j' exp(x_j' - x_0)).
 */
export function topkRef(input: ArrayLike<number>, rows: number, size: number, k: number, mode: TopkMode): { values: Float64Array; indices: Uint32Array } {
  const values = new Float64Array(rows * k);
  const indices = new Uint32Array(rows * k);
  const kk = Math.min(k, size);
  for (let r = 0; r < rows; r++) {
    const row = Array.from({ length: size }, (_, c) => input[r * size + c]!);
    const order = row.map((_, c) => c).sort((a, b) => row[b]! - row[a]! || a - b);
    const max = row[order[0]!]!;
    const rowSum = row.reduce((s, x) => s + Math.exp(x - max), 0);
    const kSum = order.slice(0, kk).reduce((s, c) => s + Math.exp(row[c]! - max), 0);
    for (let j = 0; j < kk; j++) {
      const c = order[j]!;
      indices[r * k + j] = c;
      const x = row[c]!;
      values[r * k + j] = mode === 'values' ? x : Math.exp(x - max) / (mode === 'softmax' ? rowSum : kSum);
    }
  }
  return { values, indices };
}

export interface LmHeadArgmaxUniforms {
  vocab_size: number;
  hidden_size: number;
  transpose_b: number;
  pad_token_id: number;
  logit_softcap: number;
  output_index: number;
  num_groups: number;
}

/** The f32 value lm_head_argmax writes for a group without a valid column. */
export const LM_HEAD_NEG = Math.fround(-3.402823e38);

/**
 * lm_head_argmax phase1: logit(c) = softcap(sum_k hidden[k] * W(c, k)) for c < vocab, c != pad_token_id (softcap(x) =
 * s * tanh(x / s) when s = logit_softcap > 0); group g holds columns 64g .. 64g + 63 and gets its best logit and
 * column (larger first, ties to the lower column; LM_HEAD_NEG and the group's first column when none is valid).
 * `logits` are the plain products sum_k hidden[k] * W(c, k) for every c < vocab.
 */
export function lmHeadArgmaxPhase1Ref(logits: ArrayLike<number>, u: LmHeadArgmaxUniforms): { temp_logits: Float64Array; temp_indices: Uint32Array } {
  const G = u.num_groups;
  const tl = new Float64Array(G);
  const ti = new Uint32Array(G);
  for (let g = 0; g < G; g++) {
    let bv = LM_HEAD_NEG;
    let bi = g * 64;
    for (let c = g * 64; c < g * 64 + 64; c++) {
      if (c >= u.vocab_size || c === u.pad_token_id) continue;
      const x = u.logit_softcap > 0 ? u.logit_softcap * Math.tanh(logits[c]! / u.logit_softcap) : logits[c]!;
      if (x > bv || (x === bv && c < bi)) {
        bv = x;
        bi = c;
      }
    }
    tl[g] = bv;
    ti[g] = bi;
  }
  return { temp_logits: tl, temp_indices: ti };
}

/** lm_head_argmax phase2: output[output_index] = the column of the best (logit, column) pair of the num_groups entries. */
export function lmHeadArgmaxPhase2Ref(tempLogits: ArrayLike<number>, tempIndices: ArrayLike<number>, previous: ArrayLike<number>, u: LmHeadArgmaxUniforms): Float64Array {
  let bv = -Infinity;
  let bi = -1;
  for (let g = 0; g < u.num_groups; g++) {
    const v = tempLogits[g]!;
    const c = tempIndices[g]!;
    if (bi < 0 || v > bv || (v === bv && c < bi)) {
      bv = v;
      bi = c;
    }
  }
  const out = Float64Array.from(previous);
  out[u.output_index] = bi;
  return out;
}

export interface MoeGatherUniforms {
  num_tokens: number;
  hidden_size: number;
  num_experts: number;
  top_k: number;
  max_tokens_per_expert: number;
}

/**
 * moe_gather.single_pass: slot i of expert e is the i-th routing slot s = t * top_k + j (token-major order) with
 * assignments[s] == e; output[e, i, :] = input[t, :] for i < max_tokens_per_expert, 0 for slots the expert lacks.
 */
export function moeGatherRef(input: ArrayLike<number>, assignments: ArrayLike<number>, u: MoeGatherUniforms): Float64Array {
  const { num_tokens: T, hidden_size: H, num_experts: E, top_k: K, max_tokens_per_expert: M } = u;
  const out = new Float64Array(E * M * H);
  const filled = new Array<number>(E).fill(0);
  for (let s = 0; s < T * K; s++) {
    const e = assignments[s]!;
    if (e >= E || filled[e]! >= M) continue;
    const t = Math.floor(s / K);
    const i = filled[e]!++;
    for (let h = 0; h < H; h++) out[(e * M + i) * H + h] = input[t * H + h]!;
  }
  return out;
}
