/**
 * Embeddings and reranking on decoder LLMs (the Qwen3-Embedding and Qwen3-Reranker recipes): the final normed hidden
 * state of a text's last token, L2-normalized, is its embedding; a reranker reads the logits of "yes" and "no" after
 * the Qwen3-Reranker prompt and scores P(yes). One prefill each, compiled like generation's.
 */
import { readFloat32, storageBuffer, uploadBuffer } from '../gpu/buffers.ts';
import { Recorder } from '../gpu/recorder.ts';
import type { LoadedModel } from '../models/load.ts';
import { checkTokenIds } from '../models/token-ids.ts';
import { Program } from '../program/program.ts';
import { StepBuilder } from '../program/step.ts';
import { ContextLengthError } from './decode-loop.ts';
import { computeLogits } from './logits.ts';
import { requireTokenizer } from '../models/load.ts';

/** The final normed hidden state of the last of `ids` ([hidden]). */
export async function lastHiddenState(model: LoadedModel, ids: readonly number[]): Promise<Float32Array> {
  checkTokenIds(ids, model.config.vocabSize, 'lastHiddenState: ids');
  const dec = model.decoder;
  const dev = model.device;
  const T = ids.length;
  const H = model.config.hiddenSize;
  if (T === 0) throw new RangeError('lastHiddenState: no tokens');
  if (T > dec.maxPositions) throw new ContextLengthError(T, dec.maxPositions);
  const kv = dec.createKvCache(T);
  const idsBuf = uploadBuffer(dev.device, Uint32Array.from(ids), 'hidden.ids');
  const out = storageBuffer(dev, H * 4, 'hidden.last');
  const step = new StepBuilder();
  const last = dec.emitForward(step, { buffer: idsBuf, dtype: 'uint32', shape: [T] }, kv, 0, T - 1);
  step.op('copy_elements', { src: { ...last, shape: [H] }, dst: { buffer: out, dtype: 'float32', shape: [H] } }, { count: H });
  let program: Program | undefined;
  try {
    program = await Program.compile(dec.ops, step, `hidden.T${T}`);
    const rec = new Recorder(dev, { timestamps: false });
    program.record(rec, {});
    await rec.submit();
    return await readFloat32(dev.device, out, H);
  } finally {
    program?.destroy();
    dec.destroyKvCache(kv);
    idsBuf.destroy();
    out.destroy();
  }
}

/** Qwen3-Embedding: last-token hidden states, L2-normalized (texts are tokenized with the tokenizer's special tokens). */
export async function embedWithDecoder(model: LoadedModel, inputs: readonly (string | readonly number[])[], opts: { normalize?: boolean } = {}): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  for (const x of inputs) {
    const ids = typeof x === 'string' ? requireTokenizer(model, 'embed').encode(x, { addSpecialTokens: true }) : [...x];
    const h = await lastHiddenState(model, ids);
    if (opts.normalize ?? true) {
      const inv = 1 / Math.max(Math.hypot(...h), 1e-12);
      for (let i = 0; i < h.length; i++) h[i]! *= inv;
    }
    out.push(h);
  }
  return out;
}

/** The Qwen3-Reranker prompt around one (instruction, query, document). */
export function qwen3RerankPrompt(query: string, doc: string, instruction = 'Given a web search query, retrieve relevant passages that answer the query'): string {
  return (
    '<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n' +
    `<Instruct>: ${instruction}\n<Query>: ${query}\n<Document>: ${doc}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n`
  );
}

/** Qwen3-Reranker: P(yes) from the logits of "yes" and "no" at the prompt's last position, per document. */
export async function rerankWithDecoder(model: LoadedModel, query: string, documents: readonly string[], instruction?: string): Promise<{ index: number; score: number }[]> {
  const tok = requireTokenizer(model, 'rerank');
  const one = (w: string) => {
    const ids = tok.encode(w, { addSpecialTokens: false });
    if (ids.length !== 1) throw new Error(`rerank: "${w}" is not one token in ${model.path}'s tokenizer (a Qwen3-Reranker model is needed)`);
    return ids[0]!;
  };
  const yes = one('yes');
  const no = one('no');
  const out: { index: number; score: number }[] = [];
  for (const [index, doc] of documents.entries()) {
    const { last } = await computeLogits(model, tok.encode(qwen3RerankPrompt(query, doc, instruction), { addSpecialTokens: false }));
    const m = Math.max(last[yes]!, last[no]!);
    const ey = Math.exp(last[yes]! - m);
    out.push({ index, score: ey / (ey + Math.exp(last[no]! - m)) });
  }
  return out;
}
