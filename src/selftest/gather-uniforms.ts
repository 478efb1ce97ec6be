/** The registry uniforms of a gather case (f32 and f16 tables share them), with the row width the table needs. */
export interface GatherLayout {
  transpose?: number;
  index_offset?: number;
  input_hidden_size?: number;
  hidden_offset?: number;
}

export function gatherUniforms(tokens: number, hidden: number, vocab: number, o: GatherLayout) {
  const u = {
    num_tokens: tokens,
    hidden_size: hidden,
    vocab_size: vocab,
    transpose: o.transpose ?? 0,
    index_offset: o.index_offset ?? 0,
    input_hidden_size: o.input_hidden_size ?? 0,
    hidden_offset: o.hidden_offset ?? 0,
  };
  return { u, width: u.input_hidden_size || hidden };
}
