/**
 * Embeddings and reranking on decoder LLMs (the Qwen3-Embedding and Qwen3-Reranker recipes): the final normed hidden
 * state of a text's last token, L2-normalized, is its embedding; a reranker reads the logits of "yes" and "no" after
 * the Qwen3-Reranker prompt and scores P(yes). One prefill each, compiled like generation's.
 *
 * A text becomes ids as sentence-transformers' Transformer module makes them (decoderTextInput): as one user message
 * through the tokenizer's chat template when that module takes chat messages, else through the tokenizer with its
 * special tokens.
 */
import type { ModelFolder } from '../formats/files.ts';
import { getHost } from '../host.ts';
import { ModelConfigError } from '../models/errors.ts';
import type { ChatMessage, TextTokenizer } from '../tokenizer/index.ts';
import { readFloat32, storageBuffer, uploadBuffer } from '../gpu/buffers.ts';
import { Recorder } from '../gpu/recorder.ts';
import type { LoadedModel } from '../models/load.ts';
import { checkTokenIds } from '../models/token-ids.ts';
import { Program } from '../program/program.ts';
import { StepBuilder } from '../program/step.ts';
import { ContextLengthError } from './decode-loop.ts';
import { readFolderJson } from './embed.ts';
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

/**
 * How a text becomes token ids for a decoder embedder. 'text': the tokenizer with its special tokens (e.g. Qwen3-
 * Embedding's tokenizer appends <|endoftext|>). 'chat': the text as one user message ({role: 'user', content}) rendered
 * by the tokenizer's chat template and tokenized without adding special tokens (the template places them), the way
 * sentence-transformers >= 6 feeds a text to a model whose Transformer module takes the 'message' modality; `content`
 * is the message content's shape: the text itself ('flat') or [{type: 'text', text}] ('structured').
 */
export type DecoderTextInput =
  | { kind: 'text' }
  | { kind: 'chat'; content: 'flat' | 'structured'; addGenerationPrompt: boolean; extra: Record<string, unknown> };

const TEXT_INPUT: DecoderTextInput = { kind: 'text' };

/** sentence-transformers' Transformer config file names, the first one present counting (its Transformer.load_config). */
const ST_TRANSFORMER_CONFIGS = ['sentence_bert_config.json', 'sentence_roberta_config.json', 'sentence_distilbert_config.json', 'sentence_camembert_config.json', 'sentence_albert_config.json', 'sentence_xlm-roberta_config.json', 'sentence_xlnet_config.json'];
/** Model types sentence-transformers gives flat message content whatever their template looks like. */
const FLAT_MESSAGE_MODEL_TYPES = new Set(['apertus', 'deepseek_v3', 'gpt_oss', 'seed_oss']);
/** Chat-template snippets from which sentence-transformers infers structured message content. */
const STRUCTURED_PATTERNS = ['content[0]', '.type', "'type'", '"type"', 'item.type', 'message.content['];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * How sentence-transformers (>= 6) turns a text into ids for this model folder. A folder saved by sentence-transformers
 * (modules.json): its Transformer module's sentence_bert_config.json decides; with a `modality_config` that has a
 * 'message' entry texts go through the chat template (message format and `processing_kwargs.chat_template` from
 * there), with one that has none, or with no `modality_config` at all (saved before sentence-transformers 6, e.g.
 * Qwen3-Embedding), texts are tokenized as they are. A plain Hugging Face folder (no modules.json): through the chat
 * template when the tokenizer has one, as sentence-transformers infers for a Transformer module built on it.
 */
export async function decoderTextInput(folder: ModelFolder, tokenizer: TextTokenizer | null): Promise<DecoderTextInput> {
  const modules = await readFolderJson(folder, 'modules.json');
  let message: Record<string, unknown> | undefined;
  let templateKwargs: Record<string, unknown> = {};
  if (Array.isArray(modules)) {
    const tm = (modules as { type?: unknown; path?: unknown }[]).find((m) => typeof m?.type === 'string' && /(^|\.)Transformer$/.test(m.type));
    if (!tm) return TEXT_INPUT;
    const dir = typeof tm.path === 'string' && tm.path !== '' ? `${tm.path.replace(/\/+$/, '')}/` : '';
    let cfg: unknown;
    let cfgName = '';
    for (const name of ST_TRANSFORMER_CONFIGS) {
      cfg = await readFolderJson(folder, dir + name);
      cfgName = dir + name;
      if (cfg !== undefined) break;
    }
    if (!isObject(cfg) || !isObject(cfg.modality_config)) return TEXT_INPUT;
    const m = cfg.modality_config.message;
    if (m === undefined) return TEXT_INPUT;
    if (!isObject(m)) throw new ModelConfigError(folder.pathOf(cfgName), 'modality_config.message', `${JSON.stringify(m)} is not an object ({"method": ..., "method_output_name": ..., "format": ...})`);
    message = m;
    const pk = cfg.processing_kwargs;
    if (isObject(pk) && isObject(pk.chat_template)) templateKwargs = pk.chat_template;
  } else if (tokenizer?.chatTemplateSource === undefined) return TEXT_INPUT;
  const template = tokenizer?.chatTemplateSource;
  if (template === undefined) {
    throw new ModelConfigError(folder.pathOf('tokenizer_config.json'), 'chat_template', 'missing: the sentence-transformers configuration feeds texts as chat messages, and the tokenizer has no chat template');
  }
  let content: 'flat' | 'structured';
  const format = message?.format;
  if (format === 'flat' || format === 'structured') content = format;
  else {
    const modelType = (await readFolderJson(folder, 'config.json')) as { model_type?: unknown } | undefined;
    content = FLAT_MESSAGE_MODEL_TYPES.has(String(modelType?.model_type)) ? 'flat' : STRUCTURED_PATTERNS.some((p) => template.includes(p)) ? 'structured' : 'flat';
  }
  const { add_generation_prompt, restore_suffix: _, ...extra } = templateKwargs;
  return { kind: 'chat', content, addGenerationPrompt: add_generation_prompt === true, extra };
}

const inputOf = new WeakMap<LoadedModel, Promise<DecoderTextInput>>();

/** decoderTextInput of the folder a model was loaded from (by its path, where the host can open it), else 'text'. */
function textInputOf(model: LoadedModel): Promise<DecoderTextInput> {
  let p = inputOf.get(model);
  if (!p) {
    p = (async () => {
      let folder: ModelFolder | undefined;
      try {
        const at = await (await getHost(`reading ${model.path}`)).openPath(model.path);
        if (at?.kind === 'folder') folder = at;
      } catch {
        folder = undefined; // no file system here (a page): the caller passes `input` (src/web/host.ts does)
      }
      return folder ? decoderTextInput(folder, model.tokenizer) : TEXT_INPUT;
    })();
    inputOf.set(model, p);
    p.catch(() => inputOf.delete(model));
  }
  return p;
}

/** The ids a decoder embedder runs for one text. */
export function decoderTextIds(tok: TextTokenizer, text: string, input: DecoderTextInput): number[] {
  if (input.kind === 'text') return tok.encode(text, { addSpecialTokens: true });
  const message: ChatMessage = { role: 'user', content: input.content === 'flat' ? text : [{ type: 'text', text }] };
  const rendered = tok.applyChatTemplate([message], { addGenerationPrompt: input.addGenerationPrompt, extra: input.extra });
  return tok.encode(rendered, { addSpecialTokens: false });
}

/**
 * Qwen3-Embedding: last-token hidden states, L2-normalized. Texts become ids as `opts.input` says, by default as
 * decoderTextInput finds for the folder the model was loaded from (a model not loaded from a folder: the tokenizer with
 * its special tokens); token id lists run as given.
 */
export async function embedWithDecoder(model: LoadedModel, inputs: readonly (string | readonly number[])[], opts: { normalize?: boolean; input?: DecoderTextInput } = {}): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  const textInput = inputs.some((x) => typeof x === 'string') ? (opts.input ?? (await textInputOf(model))) : TEXT_INPUT;
  for (const x of inputs) {
    const ids = typeof x === 'string' ? decoderTextIds(requireTokenizer(model, 'embed'), x, textInput) : [...x];
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
