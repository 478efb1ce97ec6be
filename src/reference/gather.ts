/**
 * CPU reference of `gather` (embedding row lookup). Semantics: src/kernels/gather.wgsl. Parameters use the registry's
 * `gather` uniform field names.
 */
export interface GatherUniforms {
  num_tokens: number;
  hidden_size: number;
  vocab_size: number;
  transpose: number;
  index_offset: number;
  input_hidden_size: number;
  hidden_offset: number;
}

/** output[t, h] = row `indices[index_offset + t]` of the table, columns hidden_offset.. (0 for ids >= vocab_size). */
export function gatherRef(indices: ArrayLike<number>, embeddings: ArrayLike<number>, u: GatherUniforms): Float64Array {
  const H = u.hidden_size;
  const S = u.input_hidden_size === 0 ? H : u.input_hidden_size;
  const out = new Float64Array(u.num_tokens * H);
  for (let t = 0; t < u.num_tokens; t++) {
    const id = indices[u.index_offset + t]!;
    if (id >= u.vocab_size) continue;
    for (let h = 0; h < H; h++) {
      const col = u.hidden_offset + h;
      out[t * H + h] = u.transpose ? embeddings[col * u.vocab_size + id]! : embeddings[id * S + col]!;
    }
  }
  return out;
}
