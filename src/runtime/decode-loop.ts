/**
 * The token loop without text: prefill, then decode with the next step recorded and submitted before the current
 * token is read back. The sampled id stays on the GPU: the next step copies it into its input ids (and the
 * repetition-penalty history) itself, so the host records step t+1 while the GPU runs step t, and reads token t
 * while step t+1 runs. The cost is one speculative step after the last token.
 */
import { STORAGE_USAGE, USAGE } from '../gpu/buffers.ts';
import { gpuWait } from '../gpu/wait.ts';
import type { Decoder, KvCache } from '../models/decoder.ts';
import type { ResolvedGenerationOptions } from './options.ts';
import { GpuSampler } from './sampler.ts';

export interface DecodedToken {
  id: number;
  /** performance.now() when the id was read back. */
  at: number;
}

export class ContextLengthError extends Error {
  constructor(prompt: number, capacity: number) {
    super(`the prompt has ${prompt} tokens but the context holds ${capacity}; shorten it or load the model with a larger maxPositions`);
    this.name = 'ContextLengthError';
  }
}

/**
 * Yields each sampled token id as it is read back; stops after o.maxTokens tokens or when the KV cache is full
 * (returns 'length' or 'context'). The caller stops earlier by leaving the loop (EOS, stop strings).
 */
export async function* decodeTokens(
  dec: Decoder,
  promptIds: readonly number[],
  o: ResolvedGenerationOptions,
  opts: { pipelined?: boolean } = {},
): AsyncGenerator<DecodedToken, 'length' | 'context', void> {
  const pipelined = opts.pipelined ?? true;
  if (promptIds.length === 0 || promptIds.length > dec.maxPositions) throw new ContextLengthError(promptIds.length, dec.maxPositions);
  const device = dec.dev.device;
  const capacity = Math.min(dec.maxPositions, promptIds.length + o.maxTokens);
  const kv: KvCache = dec.createKvCache(capacity);
  const sampler = new GpuSampler(dec, o, capacity);
  const staging = [0, 1].map((i) => device.createBuffer({ size: 16, usage: USAGE.MAP_READ | USAGE.COPY_DST, label: `token.readback.${i}` }));
  const nextIds = device.createBuffer({ size: 16, usage: STORAGE_USAGE, label: 'token.next' });
  /** Record and submit step `step` (0 = the prompt); its token lands in staging[step % 2]. */
  const submitStep = async (step: number): Promise<void> => {
    const rec = dec.newRecorder();
    let ids;
    if (step === 0) ids = dec.idsTensor(rec, promptIds);
    else {
      rec.copy(sampler.stateBuffer(), 0, nextIds, 0, 4);
      ids = { buffer: nextIds, dtype: 'uint32', shape: [1] };
    }
    const hidden = await dec.recordForward(rec, ids, kv, 1);
    const logits = await dec.recordLogits(rec, hidden);
    const token = await sampler.record(rec, logits, step);
    rec.copy(token, 0, staging[step % 2]!, 0, 4);
    await rec.submit();
  };
  // The map of a step's readback is requested right after that step's submit: Dawn completes a map once the work
  // submitted before the request is done, so asking later would also wait for the speculative next step.
  const readback = (step: number): Promise<void> => {
    const p = gpuWait(staging[step % 2]!.mapAsync(0x0001));
    p.catch(() => {}); // a speculative step's map is abandoned when the caller stops early (the buffer is destroyed)
    return p;
  };
  try {
    sampler.setHistory(promptIds);
    await submitStep(0);
    let pending: Promise<void> = readback(0);
    for (let step = 0; ; step++) {
      const more = step + 1 < o.maxTokens && kv.length + 1 <= kv.capacity;
      let next: Promise<void> | undefined;
      if (more && pipelined) {
        await submitStep(step + 1);
        next = readback(step + 1);
      }
      await pending;
      const buf = staging[step % 2]!;
      const id = new Uint32Array(buf.getMappedRange(0, 4))[0]!;
      buf.unmap();
      yield { id, at: performance.now() };
      if (more && !pipelined) {
        await submitStep(step + 1);
        next = readback(step + 1);
      }
      if (!next) return step + 1 >= o.maxTokens ? 'length' : 'context';
      pending = next;
    }
  } finally {
    // Leaving early (EOS, stop string) may leave one speculative step in flight; its buffers die with it.
    await gpuWait(device.queue.onSubmittedWorkDone());
    dec.destroyKvCache(kv);
    sampler.destroy();
    for (const b of staging) b.destroy();
    nextIds.destroy();
  }
}
