/** Full-sequence logits for `tessera logits` and tests: one prefill, logits at every position read back. */
import { readFloat32, STORAGE_USAGE } from '../gpu/buffers.ts';
import type { LoadedModel } from '../models/load.ts';

export interface LogitsResult {
  /** [T, vocab] */
  all: Float32Array;
  /** The last position's logits. */
  last: Float32Array;
  argmax: number[];
}

export async function computeLogits(model: LoadedModel, ids: readonly number[]): Promise<LogitsResult> {
  const dec = model.decoder;
  const T = ids.length;
  const V = model.config.vocabSize;
  const kv = dec.createKvCache(Math.min(dec.maxPositions, T));
  try {
    const rec = dec.newRecorder();
    const hidden = await dec.recordForward(rec, dec.idsTensor(rec, ids), kv, T);
    const logits = await dec.recordLogits(rec, hidden);
    const out = model.device.device.createBuffer({ size: T * V * 4, usage: STORAGE_USAGE, label: 'logits.readback' });
    rec.copy(logits.buffer, 0, out, 0, T * V * 4);
    await rec.submit();
    const all = await readFloat32(model.device.device, out, T * V);
    out.destroy();
    const cap = model.config.finalSoftcap;
    if (cap > 0) for (let i = 0; i < all.length; i++) all[i] = Math.tanh(all[i]! / cap) * cap;
    const argmax: number[] = [];
    for (let t = 0; t < T; t++) {
      let best = 0;
      for (let i = 1; i < V; i++) if (all[t * V + i]! > all[t * V + best]!) best = i;
      argmax.push(best);
    }
    return { all, last: all.slice((T - 1) * V), argmax };
  } finally {
    dec.destroyKvCache(kv);
  }
}
