/**
 * Tokenizers stored in GGUF metadata (`tokenizer.ggml.*`), converted to tokenizer.json form so the
 * same @huggingface/tokenizers engine runs them, and the reverse for byte-level BPE.
 *
 * - `gpt2`: byte-level BPE; `tokens` + `merges`; the pre-tokenizer regex is chosen by
 *   `tokenizer.ggml.pre` (see PRE_TOKENIZERS).
 * - `llama`: SentencePiece BPE with byte fallback; `tokens` + `scores`. SentencePiece merges the
 *   adjacent pair whose concatenation is the highest-scoring token, which is BPE with merges ranked
 *   by the merged token's score, so the merges are derived from the scores.
 */

import type { MetadataValue } from '@huggingface/gguf';
import { GGUFValueType } from '../formats/gguf-value-type.ts';
import { CorruptFileError, UnsupportedFormatError } from '../formats/errors.ts';
import { gv, type GgufTypedValue } from '../formats/gguf-writer.ts';
import { TextTokenizer } from './tokenizer.ts';
import { specialTokenContent, type AddedTokenJson, type BpeModelJson, type ComponentJson, type TokenizerConfigJson, type TokenizerJson } from './types.ts';

/** tokenizer.ggml.token_type values (llama.cpp's llama_token_type). */
export const GgufTokenType = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

const GPT2_REGEX = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const LLAMA3_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const byteLevel = (useRegex: boolean): ComponentJson => ({ type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: useRegex });
const splitThenBytes = (regex: string): ComponentJson => ({
  type: 'Sequence',
  pretokenizers: [
    { type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false },
    byteLevel(false),
  ],
});

interface PreTokenizerSpec {
  preTokenizer: ComponentJson;
  normalizer: ComponentJson | null;
  regex: string;
}

/** Byte-level pre-tokenizers by `tokenizer.ggml.pre` name ("default" and a missing key mean GPT-2). */
export const PRE_TOKENIZERS: Readonly<Record<string, PreTokenizerSpec>> = {
  default: { preTokenizer: byteLevel(true), normalizer: null, regex: GPT2_REGEX },
  'gpt-2': { preTokenizer: byteLevel(true), normalizer: null, regex: GPT2_REGEX },
  gpt2: { preTokenizer: byteLevel(true), normalizer: null, regex: GPT2_REGEX },
  'llama-bpe': { preTokenizer: splitThenBytes(LLAMA3_REGEX), normalizer: null, regex: LLAMA3_REGEX },
  llama3: { preTokenizer: splitThenBytes(LLAMA3_REGEX), normalizer: null, regex: LLAMA3_REGEX },
  'llama-v3': { preTokenizer: splitThenBytes(LLAMA3_REGEX), normalizer: null, regex: LLAMA3_REGEX },
  qwen2: { preTokenizer: splitThenBytes(QWEN2_REGEX), normalizer: { type: 'NFC' }, regex: QWEN2_REGEX },
  'deepseek-r1-qwen': { preTokenizer: splitThenBytes(QWEN2_REGEX), normalizer: { type: 'NFC' }, regex: QWEN2_REGEX },
};

type Metadata = Readonly<Record<string, MetadataValue>>;

export interface GgufTokenizerOptions {
  /** Name of the file the metadata came from, for error messages. */
  origin?: string;
  /** Use this PRE_TOKENIZERS entry instead of `tokenizer.ggml.pre`. */
  preTokenizer?: string;
}

export interface GgufTokenizerParts {
  tokenizerJson: TokenizerJson;
  tokenizerConfig: TokenizerConfigJson;
  /** eos_token_id plus eot/eom ids: every id that ends generation. */
  eosTokenIds: number[];
}

function reader(md: Metadata, origin: string) {
  const fail = (field: string, problem: string): never => {
    throw new CorruptFileError({ file: origin, field, problem });
  };
  return {
    strings(key: string): string[] {
      const v = md[key];
      if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) return fail(key, 'missing or not an array of strings');
      return v as string[];
    },
    numbers(key: string, length: number): number[] | undefined {
      const v = md[key];
      if (v === undefined) return undefined;
      if (!Array.isArray(v) || v.length !== length || !v.every((x) => typeof x === 'number')) {
        return fail(key, `must be an array of ${length} numbers (one per token)`);
      }
      return v as number[];
    },
    id(key: string, vocabSize: number): number | undefined {
      const v = md[key];
      if (v === undefined) return undefined;
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0 || n >= vocabSize) return fail(key, `token id ${String(v)} is outside the vocabulary of ${vocabSize}`);
      return n;
    },
    bool(key: string): boolean | undefined {
      const v = md[key];
      return typeof v === 'boolean' ? v : undefined;
    },
  };
}

function templateProcessing(bos: string | undefined, eos: string | undefined, ids: Map<string, number>): ComponentJson {
  const sp = (t: string) => ({ SpecialToken: { id: t, type_id: 0 } });
  const seq = (id: 'A' | 'B') => ({ Sequence: { id, type_id: 0 } });
  const wrap = (inner: object[]) => [...(bos ? [sp(bos)] : []), ...inner, ...(eos ? [sp(eos)] : [])];
  const special: Record<string, object> = {};
  for (const t of [bos, eos]) if (t) special[t] = { id: t, ids: [ids.get(t)], tokens: [t] };
  return { type: 'TemplateProcessing', single: wrap([seq('A')]), pair: [...wrap([seq('A')]), ...wrap([seq('B')])], special_tokens: special };
}

/** SentencePiece-style merges: every split of a normal token into two vocabulary tokens, ranked by score. */
function mergesFromScores(tokens: string[], scores: number[], types: number[] | undefined): [string, string][] {
  const idOf = new Map(tokens.map((t, i) => [t, i]));
  const ranked: { pair: [string, string]; score: number; id: number }[] = [];
  tokens.forEach((tok, id) => {
    if (types && types[id] !== GgufTokenType.NORMAL) return;
    const chars = Array.from(tok);
    for (let k = 1; k < chars.length; k++) {
      const left = chars.slice(0, k).join('');
      const right = chars.slice(k).join('');
      if (idOf.has(left) && idOf.has(right)) ranked.push({ pair: [left, right], score: scores[id]!, id });
    }
  });
  ranked.sort((a, b) => b.score - a.score || a.id - b.id);
  return ranked.map((r) => r.pair);
}

/** Build tokenizer.json / tokenizer_config.json equivalents from GGUF metadata. */
export function ggufToTokenizerParts(md: Metadata, options: GgufTokenizerOptions = {}): GgufTokenizerParts {
  const origin = options.origin ?? '(GGUF metadata)';
  const r = reader(md, origin);
  const kind = md['tokenizer.ggml.model'];
  if (kind !== 'gpt2' && kind !== 'llama') {
    throw new UnsupportedFormatError({
      file: origin,
      field: 'tokenizer.ggml.model',
      problem: `tokenizer kind ${JSON.stringify(kind)} is not supported (supported: "gpt2", "llama")`,
      fix: 'Load the tokenizer from the original tokenizer.json instead',
    });
  }
  const tokens = r.strings('tokenizer.ggml.tokens');
  const n = tokens.length;
  const types = r.numbers('tokenizer.ggml.token_type', n);
  const name = (key: string) => {
    const id = r.id(key, n);
    return id === undefined ? undefined : tokens[id];
  };
  const bos = name('tokenizer.ggml.bos_token_id');
  const eos = name('tokenizer.ggml.eos_token_id');
  const unk = name('tokenizer.ggml.unknown_token_id');
  const pad = name('tokenizer.ggml.padding_token_id');
  const addBos = r.bool('tokenizer.ggml.add_bos_token') ?? kind === 'llama';
  const addEos = r.bool('tokenizer.ggml.add_eos_token') ?? false;

  const ids = new Map<string, number>();
  tokens.forEach((t, i) => {
    if (!ids.has(t)) ids.set(t, i);
  });
  const added: AddedTokenJson[] = [];
  types?.forEach((type, id) => {
    if (type === GgufTokenType.CONTROL || type === GgufTokenType.USER_DEFINED || type === GgufTokenType.UNKNOWN) {
      const special = type !== GgufTokenType.USER_DEFINED;
      added.push({ id, content: tokens[id]!, single_word: false, lstrip: false, rstrip: false, normalized: false, special });
    }
  });

  let model: BpeModelJson;
  let normalizer: ComponentJson | null = null;
  let preTokenizer: ComponentJson | null;
  let decoder: ComponentJson;
  if (kind === 'gpt2') {
    const pre = options.preTokenizer ?? (md['tokenizer.ggml.pre'] as string | undefined) ?? 'default';
    const spec = Object.hasOwn(PRE_TOKENIZERS, pre) ? PRE_TOKENIZERS[pre] : undefined;
    if (!spec) {
      throw new UnsupportedFormatError({
        file: origin,
        field: 'tokenizer.ggml.pre',
        problem: `pre-tokenizer ${JSON.stringify(pre)} is not known (known: ${Object.keys(PRE_TOKENIZERS).join(', ')})`,
        fix: 'Pass options.preTokenizer naming the equivalent regex, or load the original tokenizer.json',
      });
    }
    model = { type: 'BPE', vocab: Object.fromEntries(ids), merges: r.strings('tokenizer.ggml.merges'), unk_token: unk ?? null, ignore_merges: false };
    normalizer = spec.normalizer;
    preTokenizer = spec.preTokenizer;
    decoder = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true };
  } else {
    const scores = r.numbers('tokenizer.ggml.scores', n);
    if (!scores) throw new CorruptFileError({ file: origin, field: 'tokenizer.ggml.scores', problem: 'missing (required for a "llama" tokenizer)' });
    const byteFallback = types ? types.includes(GgufTokenType.BYTE) : tokens.includes('<0x00>');
    model = { type: 'BPE', vocab: Object.fromEntries(ids), merges: mergesFromScores(tokens, scores, types), unk_token: unk ?? null, byte_fallback: byteFallback, fuse_unk: true, ignore_merges: false };
    const prefix = r.bool('tokenizer.ggml.add_space_prefix') ?? true;
    preTokenizer = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: prefix ? 'first' : 'never', split: false };
    decoder = {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '\u2581' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        ...(prefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : []),
      ],
    };
  }
  const postProcessor = addBos || addEos ? templateProcessing(addBos ? bos : undefined, addEos ? eos : undefined, ids) : null;
  const eosIds = ['tokenizer.ggml.eos_token_id', 'tokenizer.ggml.eot_token_id', 'tokenizer.ggml.eom_token_id']
    .map((k) => r.id(k, n))
    .filter((x): x is number => x !== undefined);
  const chatTemplate = md['tokenizer.chat_template'];
  return {
    tokenizerJson: { version: '1.0', added_tokens: added, normalizer, pre_tokenizer: preTokenizer, post_processor: postProcessor, decoder, model },
    tokenizerConfig: {
      bos_token: bos ?? null,
      eos_token: eos ?? null,
      unk_token: unk ?? null,
      pad_token: pad ?? null,
      add_bos_token: addBos,
      add_eos_token: addEos,
      clean_up_tokenization_spaces: false,
      ...(typeof chatTemplate === 'string' ? { chat_template: chatTemplate } : {}),
    },
    eosTokenIds: [...new Set(eosIds)],
  };
}

/** A TextTokenizer from GGUF metadata (e.g. `(await openGguf(path)).metadata`). */
export function tokenizerFromGguf(md: Metadata, options: GgufTokenizerOptions = {}): TextTokenizer {
  const parts = ggufToTokenizerParts(md, options);
  return new TextTokenizer(parts.tokenizerJson, parts.tokenizerConfig, {
    origin: options.origin ?? '(GGUF metadata)',
    extraEosTokenIds: parts.eosTokenIds,
  });
}

function findTemplate(pp: ComponentJson | null): ComponentJson | undefined {
  if (!pp) return undefined;
  if (pp.type === 'TemplateProcessing') return pp;
  if (pp.type === 'Sequence') return (pp.processors as ComponentJson[] | undefined)?.map(findTemplate).find(Boolean);
  return undefined;
}

function preTokenizerName(pre: ComponentJson | null): string | undefined {
  if (pre?.type === 'ByteLevel' && pre.use_regex !== false) return 'gpt-2';
  if (pre?.type !== 'Sequence') return undefined;
  const split = (pre.pretokenizers as ComponentJson[]).find((p) => p.type === 'Split');
  const regex = (split?.pattern as { Regex?: string } | undefined)?.Regex;
  if (regex === LLAMA3_REGEX) return 'llama-bpe';
  if (regex === QWEN2_REGEX) return 'qwen2';
  return undefined;
}

/**
 * GGUF `tokenizer.*` metadata for a byte-level BPE tokenizer.json (the "gpt2" kind), with
 * explicit value types, ready for `writeGguf`.
 */
export function tokenizerJsonToGgufMetadata(
  json: TokenizerJson,
  config: TokenizerConfigJson,
  origin = '(tokenizer.json)',
): Record<string, GgufTypedValue> {
  const model = json.model as BpeModelJson;
  const pre = preTokenizerName(json.pre_tokenizer);
  if (model.type !== 'BPE' || json.decoder?.type !== 'ByteLevel' || pre === undefined) {
    throw new UnsupportedFormatError({
      file: origin,
      field: 'model',
      problem: 'only byte-level BPE tokenizers with a GPT-2, Llama 3 or Qwen2 pre-tokenizer can be converted to GGUF here',
    });
  }
  const byId = new Map<number, string>();
  for (const [t, id] of Object.entries(model.vocab)) byId.set(id, t);
  const addedById = new Map(json.added_tokens.map((a) => [a.id, a]));
  for (const a of json.added_tokens) byId.set(a.id, a.content);
  const size = Math.max(...byId.keys()) + 1;
  const tokens: string[] = [];
  const types: number[] = [];
  for (let id = 0; id < size; id++) {
    const a = addedById.get(id);
    tokens.push(byId.get(id) ?? `[PAD${id}]`);
    types.push(!byId.has(id) ? GgufTokenType.UNUSED : a ? (a.special ? GgufTokenType.CONTROL : GgufTokenType.USER_DEFINED) : GgufTokenType.NORMAL);
  }
  const idOf = (v: TokenizerConfigJson['bos_token']) => {
    const c = specialTokenContent(v);
    const id = c === undefined ? undefined : tokens.indexOf(c);
    return id === undefined || id < 0 ? undefined : id;
  };
  const tp = findTemplate(json.post_processor);
  const single = (tp?.single as { SpecialToken?: { id: string } }[] | undefined) ?? [];
  const bosFromTp = single[0]?.SpecialToken?.id;
  const eosFromTp = single.length > 1 ? single[single.length - 1]?.SpecialToken?.id : undefined;
  const bos = idOf(config.bos_token) ?? idOf(bosFromTp);
  const eos = idOf(config.eos_token) ?? idOf(eosFromTp);
  const out: Record<string, GgufTypedValue> = {
    'tokenizer.ggml.model': gv.str('gpt2'),
    'tokenizer.ggml.pre': gv.str(pre),
    'tokenizer.ggml.tokens': gv.arr(GGUFValueType.STRING, tokens),
    'tokenizer.ggml.token_type': gv.arr(GGUFValueType.INT32, types),
    'tokenizer.ggml.merges': gv.arr(GGUFValueType.STRING, model.merges.map((m) => (Array.isArray(m) ? m.join(' ') : m))),
    'tokenizer.ggml.add_bos_token': gv.bool(config.add_bos_token ?? bosFromTp !== undefined),
    'tokenizer.ggml.add_eos_token': gv.bool(config.add_eos_token ?? eosFromTp !== undefined),
  };
  if (bos !== undefined) out['tokenizer.ggml.bos_token_id'] = gv.u32(bos);
  if (eos !== undefined) out['tokenizer.ggml.eos_token_id'] = gv.u32(eos);
  const pad = idOf(config.pad_token);
  if (pad !== undefined) out['tokenizer.ggml.padding_token_id'] = gv.u32(pad);
  const template = typeof config.chat_template === 'string' ? config.chat_template : undefined;
  if (template) out['tokenizer.chat_template'] = gv.str(template);
  return out;
}
