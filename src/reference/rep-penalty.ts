/**
 * CPU reference of the `rep_penalty` operation: HF's RepetitionPenaltyLogitsProcessor, in place. Each distinct id of
 * a row's history (ids >= vocab_size ignored) has its logit divided by `penalty` when positive or zero, multiplied
 * when negative; rows are batch_offset .. batch_offset + max(batch_count, 1) - 1 of the logits. The semantics and
 * layout are documented in src/kernels/rep_penalty.wgsl.
 */

/** The registry's `rep_penalty` uniform fields (padding omitted). */
export interface RepPenaltyUniforms {
  vocab_size: number;
  history_count: number;
  penalty: number;
  batch_count: number;
  batch_offset: number;
}

/** Apply the penalty to `logits` in place (f32 storage; the kernel's f32 division may differ by an ulp or two). */
export function repPenaltyRef(logits: Float32Array, history: ArrayLike<number>, u: RepPenaltyUniforms): Float32Array {
  const rows = Math.max(u.batch_count, 1);
  const penalty = Math.fround(u.penalty);
  for (let r = 0; r < rows; r++) {
    const seen = new Set<number>();
    for (let j = 0; j < u.history_count; j++) {
      const t = history[r * u.history_count + j]!;
      if (t >= u.vocab_size || seen.has(t)) continue;
      seen.add(t);
      const at = (u.batch_offset + r) * u.vocab_size + t;
      const x = logits[at]!;
      logits[at] = x < 0 ? x * penalty : x / penalty;
    }
  }
  return logits;
}
