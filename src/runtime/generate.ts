/**
 * The generation loop: prefill the prompt, then one submit per token (forward + LM head + GPU sampling), reading
 * back only the sampled token id. Streams text as an async iterator.
 */
import { gpuWait } from '../gpu/wait.ts';
import { USAGE } from '../gpu/buffers.ts';
import type { LoadedModel } from '../models/load.ts';
import type { KvCache } from '../models/decoder.ts';
import { resolveGenerationOptions, type GenerationOptions, type ResolvedGenerationOptions } from './options.ts';
import { GpuSampler } from './sampler.ts';
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

export class ContextLengthError extends Error {
  constructor(prompt: number, capacity: number) {
    super(`the prompt has ${prompt} tokens but the context holds ${capacity}; shorten it or load the model with a larger maxPositions`);
    this.name = 'ContextLengthError';
  }
}

const now = () => performance.now();

export async function* generateTokens(
  model: LoadedModel,
  promptIds: readonly number[],
  options: GenerationOptions = {},
): AsyncGenerator<TokenEvent, GenerationResult, void> {
  const dec = model.decoder;
  const dev = model.device;
  const o: ResolvedGenerationOptions = resolveGenerationOptions(options, {
    eosTokenIds: model.tokenizer.eosTokenIds.length ? [...model.tokenizer.eosTokenIds] : model.config.eosTokenIds,
  });
  if (promptIds.length === 0) throw new ContextLengthError(0, dec.maxPositions);
  const capacity = Math.min(dec.maxPositions, promptIds.length + o.maxTokens);
  if (promptIds.length > dec.maxPositions) throw new ContextLengthError(promptIds.length, dec.maxPositions);
  const kv: KvCache = dec.createKvCache(capacity);
  const sampler = new GpuSampler(dec, o, capacity);
  const staging = dev.device.createBuffer({ size: 16, usage: USAGE.MAP_READ | USAGE.COPY_DST, label: 'token.readback' });
  const stream = model.tokenizer.streamDecoder();
  const stops = new StopStringFilter(o.stop);
  const ids: number[] = [];
  let text = '';
  let finishReason: FinishReason = 'length';
  const t0 = now();
  let tFirst = t0;
  try {
    sampler.setHistory(promptIds);
    let input = [...promptIds];
    while (ids.length < o.maxTokens) {
      if (kv.length + input.length > kv.capacity) {
        finishReason = 'context';
        break;
      }
      const rec = dec.newRecorder();
      const hidden = await dec.recordForward(rec, dec.idsTensor(rec, input), kv, 1);
      const logits = await dec.recordLogits(rec, hidden);
      const token = await sampler.record(rec, logits, ids.length);
      rec.copy(token, 0, staging, 0, 4);
      await rec.submit();
      await gpuWait(staging.mapAsync(0x0001));
      const id = new Uint32Array(staging.getMappedRange(0, 4))[0]!;
      staging.unmap();
      if (ids.length === 0) tFirst = now();
      ids.push(id);
      sampler.pushHistory(id);
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
      input = [id];
    }
    const tail = stops.push(stream.flush()) + stops.flush();
    if (tail) {
      text += tail;
      yield { token: -1, text: tail };
    }
  } finally {
    dec.destroyKvCache(kv);
    sampler.destroy();
    staging.destroy();
  }
  const tEnd = now();
  const prefillMs = tFirst - t0;
  const decodeMs = tEnd - tFirst;
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
