/**
 * Structural checks of tokenizer.json / tokenizer_config.json before @huggingface/tokenizers sees them, and a probe
 * encode/decode after: a malformed file fails at load with a CorruptFileError naming the file and field, instead of
 * a TypeError (or ids that are strings) at the first encode.
 */
import { CorruptFileError } from '../formats/errors.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/**
 * Largest vocabulary accepted (the model config's vocab_size has the same bound). Ids beyond it are refused at load:
 * the tokenizer library sizes tables by the largest id, so one id of 2e9 would stall the process for minutes.
 */
export const MAX_VOCAB_SIZE = 1 << 22;
const isId = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v < MAX_VOCAB_SIZE;
const ID_RANGE = `an integer from 0 to ${MAX_VOCAB_SIZE - 1}`;

export function checkTokenizerFiles(json: unknown, config: unknown, origin: string): void {
  const bad = (field: string, problem: string): never => {
    throw new CorruptFileError({ file: origin, field, problem, fix: 'Re-export the tokenizer (tokenizer.save_pretrained)' });
  };
  if (!isObj(json)) bad('(root)', 'tokenizer.json must hold a JSON object');
  const j = json as Record<string, unknown>;
  const model = j.model;
  if (!isObj(model) || typeof model.type !== 'string') bad('model', 'must be an object with a "type" (BPE, Unigram, WordPiece, ...)');
  const m = model as Record<string, unknown>;
  if (m.type === 'Unigram') {
    if (m.vocab !== undefined && (!Array.isArray(m.vocab) || !m.vocab.every((e) => Array.isArray(e) && typeof e[0] === 'string' && typeof e[1] === 'number' && Number.isFinite(e[1])))) {
      bad('model.vocab', 'must be a list of [token, score] pairs');
    }
  } else if (m.vocab !== undefined) {
    if (!isObj(m.vocab)) bad('model.vocab', 'must be an object of token -> id');
    for (const [t, id] of Object.entries(m.vocab as object)) if (!isId(id)) bad(`model.vocab[${JSON.stringify(t)}]`, `id must be ${ID_RANGE}, got ${JSON.stringify(id)}`);
  }
  if (m.merges !== undefined) {
    const okMerge = (x: unknown) => typeof x === 'string' || (Array.isArray(x) && x.length === 2 && x.every((s) => typeof s === 'string'));
    if (!Array.isArray(m.merges) || !m.merges.every(okMerge)) bad('model.merges', 'must be a list of "a b" strings or [a, b] pairs');
  }
  if (j.added_tokens !== undefined) {
    if (!Array.isArray(j.added_tokens)) bad('added_tokens', 'must be a list');
    (j.added_tokens as unknown[]).forEach((a, i) => {
      if (!isObj(a) || !isId(a.id) || typeof a.content !== 'string') bad(`added_tokens[${i}]`, `must be {id: ${ID_RANGE}, content: string, ...}`);
    });
  }
  for (const c of ['normalizer', 'pre_tokenizer', 'post_processor', 'decoder']) {
    const v = j[c];
    if (v !== undefined && v !== null && (!isObj(v) || typeof v.type !== 'string')) bad(c, 'must be null or an object with a "type"');
  }
  if (config === undefined || config === null) return;
  if (!isObj(config)) bad('tokenizer_config.json', 'must hold a JSON object');
  const cfg = config as Record<string, unknown>;
  for (const f of ['bos_token', 'eos_token', 'unk_token', 'pad_token']) {
    const v = cfg[f];
    if (v !== undefined && v !== null && typeof v !== 'string' && !(isObj(v) && typeof v.content === 'string')) bad(f, 'must be a string, {content: string}, or null');
  }
  const ct = cfg.chat_template;
  if (ct !== undefined && ct !== null && typeof ct !== 'string' && !(Array.isArray(ct) && ct.every((t) => isObj(t) && typeof t.template === 'string'))) {
    bad('chat_template', 'must be a string or a list of {name, template}');
  }
}

/** Ids an encoder returned: non-negative integers (a malformed vocabulary can yield strings or nulls). */
export function checkEncoded(ids: unknown, origin: string): number[] {
  if (!Array.isArray(ids) || !ids.every(isId)) {
    throw new CorruptFileError({ file: origin, field: 'model.vocab', problem: `encoding produced ids that are not integers (${JSON.stringify(ids).slice(0, 80)})` });
  }
  return ids as number[];
}
