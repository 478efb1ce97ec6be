/** Generation options, their defaults and validation (one step that throws a named error saying how to fix it). */
export interface GenerationOptions {
  maxTokens?: number;
  /** <= 0: greedy. */
  temperature?: number;
  /** 0: no top-k. */
  topK?: number;
  /** >= 1: no top-p. */
  topP?: number;
  /** 1: none (HF repetition_penalty). */
  repetitionPenalty?: number;
  seed?: number;
  /** Stop when the generated text contains one of these (the stop string is not emitted). */
  stop?: string[];
  /** Stop on these token ids (default: the tokenizer's / config's EOS ids). */
  eosTokenIds?: number[];
  /** Do not stop on EOS (for benchmarks). */
  ignoreEos?: boolean;
}

export type ResolvedGenerationOptions = Required<Omit<GenerationOptions, 'eosTokenIds'>> & { eosTokenIds: number[] };

export class GenerationOptionsError extends Error {
  constructor(field: string, detail: string) {
    super(`generation option ${field}: ${detail}`);
    this.name = 'GenerationOptionsError';
  }
}

export function resolveGenerationOptions(o: GenerationOptions, defaults: { eosTokenIds: number[] }): ResolvedGenerationOptions {
  const r: ResolvedGenerationOptions = {
    maxTokens: o.maxTokens ?? 128,
    temperature: o.temperature ?? 0,
    topK: o.topK ?? 0,
    topP: o.topP ?? 1,
    repetitionPenalty: o.repetitionPenalty ?? 1,
    seed: o.seed ?? Math.floor(Math.random() * 0x7fffffff),
    stop: o.stop ?? [],
    eosTokenIds: o.eosTokenIds ?? defaults.eosTokenIds,
    ignoreEos: o.ignoreEos ?? false,
  };
  const num = (f: keyof ResolvedGenerationOptions, v: number, ok: boolean, want: string) => {
    if (typeof v !== 'number' || Number.isNaN(v) || !ok) throw new GenerationOptionsError(f, `got ${v}; ${want}`);
  };
  num('maxTokens', r.maxTokens, Number.isInteger(r.maxTokens) && r.maxTokens >= 0, 'use a non-negative integer');
  num('temperature', r.temperature, r.temperature >= 0 && Number.isFinite(r.temperature), 'use 0 (greedy) or a positive number');
  num('topK', r.topK, Number.isInteger(r.topK) && r.topK >= 0, 'use 0 (off) or a positive integer');
  num('topP', r.topP, r.topP > 0 && r.topP <= 1, 'use a number in (0, 1]; 1 turns it off');
  num('repetitionPenalty', r.repetitionPenalty, r.repetitionPenalty > 0 && Number.isFinite(r.repetitionPenalty), 'use a positive number; 1 turns it off');
  num('seed', r.seed, Number.isInteger(r.seed) && r.seed >= 0 && r.seed <= 0xffffffff, 'use an integer in 0..2^32-1');
  if (!Array.isArray(r.stop) || r.stop.some((s) => typeof s !== 'string' || s.length === 0)) {
    throw new GenerationOptionsError('stop', 'use a list of non-empty strings');
  }
  return r;
}
