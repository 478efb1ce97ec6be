/**
 * Generation with text: the token loop (decode-loop.ts: one submit per token, GPU sampling, the next step queued
 * before the current token is read) plus streaming detokenization, EOS and stop strings, as an async iterator.
 */
import type { LoadedModel } from '../models/load.ts';
import { checkTokenIds } from '../models/token-ids.ts';
import { resolveGenerationOptions, type GenerationOptions, type ResolvedGenerationOptions } from './options.ts';
import { decodeTokens } from './decode-loop.ts';
import { StopStringFilter } from './stop.ts';

export interface TokenEvent {
  token: number;
  /** Text this token completes (may be empty while a multi-byte character is incomplete). */
  text: string;
}

export type FinishReason = 'eos' | 'stop' | 'length' | 'context';

export interface GenerationResult {
  ids: number[];
  text: string;
  finishReason: FinishReason;
  promptTokens: number;
  prefillMs: number;
  decodeMs: number;
  prefillTokensPerSecond: number;
  decodeTokensPerSecond: number;
}

export { ContextLengthError, NonFiniteLogitsError } from './decode-loop.ts';

const now = () => performance.now();

export async function* generateTokens(
  model: LoadedModel,
  promptIds: readonly number[],
  options: GenerationOptions = {},
): AsyncGenerator<TokenEvent, GenerationResult, void> {
  checkTokenIds(promptIds, model.config.vocabSize, 'generateTokens: promptIds');
  const dec = model.decoder;
  const o: ResolvedGenerationOptions = resolveGenerationOptions(options, {
    eosTokenIds: model.tokenizer?.eosTokenIds.length ? [...model.tokenizer.eosTokenIds] : model.config.eosTokenIds,
  });
  const stream = model.tokenizer?.streamDecoder() ?? { push: (_id: number) => '', flush: () => '' }; // no tokenizer: ids only
  const stops = new StopStringFilter(o.stop);
  const ids: number[] = [];
  let text = '';
  let finishReason: FinishReason = 'length';
  const t0 = now();
  let tFirst = t0;
  let tLast = t0;
  const steps = decodeTokens(dec, promptIds, o, { label: model.path });
  try {
    for (;;) {
      const r = await steps.next();
      if (r.done) {
        finishReason = r.value;
        break;
      }
      const { id, at } = r.value;
      if (ids.length === 0) tFirst = at;
      tLast = at;
      ids.push(id);
      if (!o.ignoreEos && o.eosTokenIds.includes(id)) {
        finishReason = 'eos';
        break;
      }
      const piece = stops.push(stream.push(id));
      text += piece;
      yield { token: id, text: piece };
      if (stops.stopped) {
        finishReason = 'stop';
        break;
      }
    }
    const tail = stops.push(stream.flush()) + stops.flush();
    if (tail) {
      text += tail;
      yield { token: -1, text: tail };
    }
  } finally {
    await steps.return('length');
  }
  if (ids.length === 0) tFirst = tLast = now(); // maxTokens 0: the prompt ran, no token was read
  const prefillMs = tFirst - t0;
  const decodeMs = tLast - tFirst;
  return {
    ids,
    text,
    finishReason,
    promptTokens: promptIds.length,
    prefillMs,
    decodeMs,
    prefillTokensPerSecond: prefillMs > 0 ? (promptIds.length / prefillMs) * 1000 : 0,
    decodeTokensPerSecond: decodeMs > 0 && ids.length > 1 ? ((ids.length - 1) / decodeMs) * 1000 : 0,
  };
}

/** Run generation to the end and collect the result. */
export async function generate(model: LoadedModel, promptIds: readonly number[], options: GenerationOptions = {}, onToken?: (e: TokenEvent) => void): Promise<GenerationResult> {
  const it = generateTokens(model, promptIds, options);
  for (;;) {
    const r = await it.next();
    if (r.done) return r.value;
    onToken?.(r.value);
  }
}
