/**
 * Text tokenizer: tokenizer.json (+ tokenizer_config.json, generation_config.json, chat template)
 * run by @huggingface/tokenizers, with the ids a generation loop needs (BOS, every EOS), a
 * streaming decoder and the chat template.
 */

import { getHost } from '../host.ts';
import { readText, type ModelFolder } from '../formats/files.ts';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { CorruptFileError, FormatError, MissingFileError, UnsupportedFormatError } from '../formats/errors.ts';
import { ChatTemplate, type ChatTemplateOptions } from './chat-template.ts';
import { StreamDecoder } from './stream.ts';
import { specialTokenContent, type ChatMessage, type TokenizerConfigJson, type TokenizerJson } from './types.ts';
import { checkEncoded, checkTokenizerFiles } from './validate.ts';

/** Encoded and decoded once at load, so a malformed tokenizer fails there rather than at the first prompt. */
const PROBE = 'Hello, world! 12345 \u00e9\u4e16 \n\t';

export interface EncodeOptions {
  /** Add the special tokens of the post-processor (e.g. BOS). Default true. */
  addSpecialTokens?: boolean;
}

export interface DecodeOptions {
  /** Drop special tokens (BOS, EOS, chat markers) from the text. Default false. */
  skipSpecialTokens?: boolean;
}

export interface TokenizerOptions {
  /** Where the tokenizer came from (a directory or file), for error messages. */
  origin?: string;
  /** End-of-sequence ids beyond the config's eos_token (e.g. from generation_config.json). */
  extraEosTokenIds?: readonly number[];
  /** A chat template overriding tokenizer_config.json's chat_template. */
  chatTemplate?: string;
}

export class TextTokenizer {
  readonly origin: string;
  readonly bosToken?: string;
  readonly bosTokenId?: number;
  readonly eosToken?: string;
  /** Every id that ends generation: the config's eos_token plus any extra ones, deduplicated. */
  readonly eosTokenIds: readonly number[];
  readonly padTokenId?: number;
  readonly unkTokenId?: number;
  /** Largest token id + 1. */
  readonly vocabSize: number;
  readonly chatTemplateSource?: string;
  /**
   * Whether transformers' tokenizer for these files returns token_type_ids (has them in its model_input_names):
   * tokenizer_config.json's `model_input_names` when it lists them, else by its `tokenizer_class`: BertTokenizer does;
   * the generic classes (PreTrainedTokenizerFast, TokenizersBackend: transformers 5's default model_input_names are
   * input_ids and attention_mask) do not, so a model given them sees token type 0 everywhere. Undefined when the
   * config names no class or another model's class (the caller decides by the model family).
   */
  readonly returnsTokenTypeIds: boolean | undefined;
  private readonly hf: HfTokenizer;
  private readonly specialIds: ReadonlySet<number>;
  private template?: ChatTemplate;
  private readonly templateTokens: Record<string, string | undefined>;

  constructor(json: TokenizerJson, config: TokenizerConfigJson, options: TokenizerOptions = {}) {
    this.origin = options.origin ?? '(tokenizer.json)';
    checkTokenizerFiles(json, config, this.origin);
    try {
      this.hf = new HfTokenizer(json, config);
    } catch (err) {
      throw new UnsupportedFormatError({
        file: this.origin,
        problem: `tokenizer.json could not be loaded: ${(err as Error).message}`,
      });
    }
    try {
      // bos/eos must resolve (generation depends on them); pad/unk are only informative.
      const idOf = (field: 'bos_token' | 'eos_token' | 'pad_token' | 'unk_token', strict = true): [string | undefined, number | undefined] => {
        const content = specialTokenContent(config[field]);
        if (content === undefined) return [undefined, undefined];
        const id = this.hf.token_to_id(content);
        if (id === undefined && strict) {
          throw new CorruptFileError({ file: this.origin, field, problem: `token ${JSON.stringify(content)} is not in the vocabulary` });
        }
        return [content, id];
      };
      [this.bosToken, this.bosTokenId] = idOf('bos_token');
      let eosId: number | undefined;
      [this.eosToken, eosId] = idOf('eos_token');
      [, this.padTokenId] = idOf('pad_token', false);
      [, this.unkTokenId] = idOf('unk_token', false);
      this.eosTokenIds = [...new Set([...(eosId !== undefined ? [eosId] : []), ...(options.extraEosTokenIds ?? [])])];
      this.specialIds = new Set([...this.hf.get_added_tokens_decoder()].filter(([, t]) => t.special).map(([id]) => id));
      let maxId = -1;
      for (const id of this.hf.get_vocab(true).values()) maxId = Math.max(maxId, id);
      this.vocabSize = maxId + 1;
      this.chatTemplateSource = options.chatTemplate ?? pickChatTemplate(config.chat_template);
      this.returnsTokenTypeIds = returnsTokenTypeIds(config);
      this.templateTokens = {
        bos_token: this.bosToken,
        eos_token: this.eosToken,
        unk_token: specialTokenContent(config.unk_token),
        pad_token: specialTokenContent(config.pad_token),
      };
      // Probe: encode and decode once, so a malformed tokenizer fails here, naming the file.
      for (const special of [true, false]) {
        const ids = checkEncoded(this.hf.encode(PROBE, { add_special_tokens: special }).ids, this.origin);
        this.hf.decode(ids, { skip_special_tokens: false });
      }
    } catch (err) {
      throw this.wrap('load', err);
    }
  }

  /** An error from the tokenizer library (a TypeError on a malformed file) as a CorruptFileError naming the file. */
  private wrap(what: string, err: unknown): FormatError {
    if (err instanceof FormatError) return err;
    return new CorruptFileError({ file: this.origin, problem: `the tokenizer failed to ${what === 'load' ? 'load (encoding a probe text)' : what}: ${(err as Error)?.message ?? String(err)}`, fix: 'The tokenizer files are malformed; re-export them' });
  }

  private guard<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw this.wrap(what, err);
    }
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    return this.guard('encode', () => checkEncoded(this.hf.encode(text, { add_special_tokens: options.addSpecialTokens ?? true }).ids, this.origin));
  }

  /**
   * A pair of texts joined as the post-processor joins them (BERT: [CLS] a [SEP] b [SEP]; RoBERTa: <s> a </s></s> b
   * </s>), with the token type of each id the post-processor gives (whether a model should see them: returnsTokenTypeIds).
   */
  encodePair(a: string, b: string, options: EncodeOptions = {}): { ids: number[]; typeIds: number[] } {
    return this.guard('encode a pair', () => {
      const e = this.hf.encode(a, { text_pair: b, add_special_tokens: options.addSpecialTokens ?? true, return_token_type_ids: true });
      const ids = checkEncoded(e.ids, this.origin);
      const typeIds = e.token_type_ids ?? ids.map(() => 0);
      if (typeIds.length !== ids.length) throw new Error(`the post-processor gave ${typeIds.length} token types for ${ids.length} ids`);
      return { ids, typeIds: [...typeIds] };
    });
  }

  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    if (ids.length === 0) return '';
    return this.guard('decode', () => this.hf.decode([...ids], { skip_special_tokens: options.skipSpecialTokens ?? false }));
  }

  tokenToId(token: string): number | undefined {
    return this.hf.token_to_id(token);
  }

  idToToken(id: number): string | undefined {
    return this.hf.id_to_token(id);
  }

  /** True for added tokens marked special (BOS, EOS, chat markers). */
  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  isEos(id: number): boolean {
    return this.eosTokenIds.includes(id);
  }

  /** A decoder that turns ids pushed one at a time into text, emitting only complete characters. */
  streamDecoder(options: DecodeOptions = {}): StreamDecoder {
    const skip = options.skipSpecialTokens ?? false;
    return new StreamDecoder((ids) =>
      ids.length === 0 ? '' : this.guard('decode', () => this.hf.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false })),
    );
  }

  /** Render messages with the chat template (throws ChatTemplateError if there is none). */
  applyChatTemplate(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): string {
    if (!this.template) {
      if (this.chatTemplateSource === undefined) {
        throw new UnsupportedFormatError({
          file: this.origin,
          field: 'chat_template',
          problem: 'this tokenizer has no chat template',
          fix: 'Use a chat/instruct model, or pass options.chatTemplate when loading the tokenizer',
        });
      }
      this.template = new ChatTemplate(this.chatTemplateSource, this.origin, this.templateTokens);
    }
    return this.template.render(messages, options);
  }
}

/** Tokenizer classes whose transformers 5 model_input_names include token_type_ids (without a "Fast" suffix). */
const TOKEN_TYPE_CLASSES = new Set(['BertTokenizer']);
/** transformers' generic tokenizer classes: model_input_names input_ids and attention_mask (transformers 5). */
const GENERIC_CLASSES = new Set(['PreTrainedTokenizer', 'TokenizersBackend', 'PythonBackend']);

function returnsTokenTypeIds(config: TokenizerConfigJson): boolean | undefined {
  const names = config.model_input_names;
  if (Array.isArray(names)) return names.includes('token_type_ids');
  if (typeof config.tokenizer_class !== 'string') return undefined;
  const cls = config.tokenizer_class.replace(/Fast$/, '');
  if (TOKEN_TYPE_CLASSES.has(cls)) return true;
  if (GENERIC_CLASSES.has(cls)) return false;
  return undefined;
}

function pickChatTemplate(t: TokenizerConfigJson['chat_template']): string | undefined {
  if (typeof t === 'string') return t;
  if (Array.isArray(t)) return (t.find((x) => x.name === 'default') ?? t[0])?.template;
  return undefined;
}

async function readJson(folder: ModelFolder, name: string, required: boolean): Promise<unknown> {
  const file = folder.pathOf(name);
  const f = await folder.open(name);
  if (!f) {
    if (!required) return undefined;
    throw new MissingFileError({ file, problem: 'does not exist', fix: 'The model directory needs a tokenizer.json (a "fast" tokenizer)' });
  }
  const text = await readText(f);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CorruptFileError({ file, problem: `not valid JSON (${(err as Error).message})` });
  }
}

/** A folder as ModelFolder, or in Node by path. */
async function folderAt(source: string | ModelFolder): Promise<ModelFolder> {
  if (typeof source !== 'string') return source;
  const at = await (await getHost(`loadTokenizer(${source})`)).openPath(source);
  if (at?.kind === 'folder') return at;
  // Not a folder: report the missing tokenizer.json under it, as reading it would.
  return { kind: 'folder', path: source, pathOf: (n) => `${source}/${n}`, open: async () => undefined, list: async () => [] };
}

function eosIdsOf(generationConfig: unknown): number[] {
  const v = (generationConfig as { eos_token_id?: unknown } | undefined)?.eos_token_id;
  if (typeof v === 'number') return [v];
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number');
  return [];
}

/**
 * Load a tokenizer from a model folder (a ModelFolder, or in Node a path): tokenizer.json (required), tokenizer_config.json,
 * generation_config.json (extra EOS ids) and chat_template.jinja / chat_template.json when present.
 */
export async function loadTokenizer(source: string | ModelFolder): Promise<TextTokenizer> {
  const folder = await folderAt(source);
  const dir = folder.path;
  const json = await readJson(folder, 'tokenizer.json', true);
  if (typeof json !== 'object' || json === null || !('model' in json)) {
    throw new CorruptFileError({ file: folder.pathOf('tokenizer.json'), field: 'model', problem: 'missing; this is not a tokenizer.json' });
  }
  const config = ((await readJson(folder, 'tokenizer_config.json', false)) ?? {}) as TokenizerConfigJson;
  const generation = await readJson(folder, 'generation_config.json', false);
  let chatTemplate: string | undefined;
  const jinja = await folder.open('chat_template.jinja');
  if (jinja) {
    chatTemplate = await readText(jinja);
  } else {
    const ct = (await readJson(folder, 'chat_template.json', false)) as { chat_template?: unknown } | undefined;
    if (typeof ct?.chat_template === 'string') chatTemplate = ct.chat_template;
  }
  const tokenizerJson = { added_tokens: [], normalizer: null, pre_tokenizer: null, post_processor: null, decoder: null, ...json } as TokenizerJson;
  return new TextTokenizer(tokenizerJson, config, {
    origin: dir,
    extraEosTokenIds: eosIdsOf(generation),
    chatTemplate: chatTemplate ?? pickChatTemplate(config.chat_template),
  });
}
