/**
 * The parts of tokenizer.json / tokenizer_config.json this package reads or writes. Both files hold
 * more than is typed here; unknown fields are passed through to @huggingface/tokenizers untouched.
 */

export interface AddedTokenJson {
  id: number;
  content: string;
  single_word?: boolean;
  lstrip?: boolean;
  rstrip?: boolean;
  normalized?: boolean;
  special?: boolean;
}

export interface BpeModelJson {
  type: 'BPE';
  vocab: Record<string, number>;
  merges: string[] | [string, string][];
  unk_token?: string | null;
  byte_fallback?: boolean;
  fuse_unk?: boolean;
  ignore_merges?: boolean;
  dropout?: number | null;
  continuing_subword_prefix?: string | null;
  end_of_word_suffix?: string | null;
}

/** A tokenizer component config (normalizer, pre_tokenizer, post_processor, decoder). */
export interface ComponentJson {
  type: string;
  [key: string]: unknown;
}

export interface TokenizerJson {
  version?: string;
  added_tokens: AddedTokenJson[];
  normalizer: ComponentJson | null;
  pre_tokenizer: ComponentJson | null;
  post_processor: ComponentJson | null;
  decoder: ComponentJson | null;
  model: BpeModelJson | ComponentJson;
  [key: string]: unknown;
}

/** A special token in tokenizer_config.json: a string or an AddedToken-like object. */
export type SpecialTokenValue = string | { content: string; [key: string]: unknown } | null;

export interface TokenizerConfigJson {
  bos_token?: SpecialTokenValue;
  eos_token?: SpecialTokenValue;
  unk_token?: SpecialTokenValue;
  pad_token?: SpecialTokenValue;
  add_bos_token?: boolean;
  add_eos_token?: boolean;
  clean_up_tokenization_spaces?: boolean;
  chat_template?: string | { name: string; template: string }[];
  [key: string]: unknown;
}

/** One chat message, as chat templates expect it. */
export interface ChatMessage {
  role: string;
  content?: string | null | { type: string; [key: string]: unknown }[];
  [key: string]: unknown;
}

export function specialTokenContent(v: SpecialTokenValue | undefined): string | undefined {
  if (v === null || v === undefined) return undefined;
  return typeof v === 'string' ? v : v.content;
}
