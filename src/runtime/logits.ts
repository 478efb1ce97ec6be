/** Full-sequence logits for `tessera logits` and tests: one prefill, logits at every position read back. */
import { readFloat32, storageBuffer, uploadBuffer } from '../gpu/buffers.ts';
import { Recorder } from '../gpu/recorder.ts';
import { recordInterpreted } from '../program/interpret.ts';
import { Program } from '../program/program.ts';
import { StepBuilder } from '../program/step.ts';
import { ContextLengthError, NonFiniteLogitsError } from './decode-loop.ts';
import type { StepPath } from './session.ts';
import type { LoadedModel } from '../models/load.ts';
import { checkTokenIds } from '../models/token-ids.ts';

export interface LogitsResult {
  /** [T, vocab] */
  all: Float32Array;
  /** The last position's logits. */
  last: Float32Array;
  argmax: number[];
}

/**
 * One prefill of `ids` (positions 0..T-1 of a fresh KV cache) with logits at every position, read back. The step is
 * compiled into a program like generation's (or, with path 'per-op', recorded op by op: the reference path). With
 * `tokenByToken` the tokens go through one at a time, each over the cache the ones before it wrote, as decoding runs
 * them (the single-token layers: fused GEMVs where the decoder has them), so the two paths can be compared.
 */
export async function computeLogits(model: LoadedModel, ids: readonly number[], opts: { path?: StepPath; tokenByToken?: boolean } = {}): Promise<LogitsResult> {
  checkTokenIds(ids, model.config.vocabSize, 'computeLogits: ids');
  const dec = model.decoder;
  const dev = model.device;
  const T = ids.length;
  const V = model.config.vocabSize;
  if (T > dec.maxPositions) throw new ContextLengthError(T, dec.maxPositions);
  const kv = dec.createKvCache(T);
  const idsBuf = uploadBuffer(dev.device, Uint32Array.from(ids), 'logits.ids');
  const step = new StepBuilder();
  const idsT = { buffer: idsBuf, dtype: 'uint32', shape: [T] };
  const out = storageBuffer(dev, T * V * 4, 'logits.all');
  const outT = { buffer: out, dtype: 'float32', shape: [T * V] };
  // The logits activations are copied out by the last ops, so the program owns all of its memory.
  if (opts.tokenByToken) {
    for (let t = 0; t < T; t++) {
      const id = step.act('id', [1], 'uint32');
      step.op('copy_elements', { src: idsT, dst: id }, { count: 1, src_offset: t });
      const logits = dec.emitForwardLogits(step, id, kv, t);
      step.op('copy_elements', { src: { ...logits, shape: [V] }, dst: outT }, { count: V, dst_offset: t * V });
    }
  } else {
    const logits = dec.emitForwardLogits(step, idsT, kv, 0);
    step.op('copy_elements', { src: { ...logits, shape: [T * V] }, dst: outT }, { count: T * V });
  }
  let program: Program | undefined;
  try {
    const rec = new Recorder(dev, { timestamps: false });
    if (opts.path === 'per-op') await recordInterpreted(dec.ops, step, rec, {});
    else {
      program = await Program.compile(dec.ops, step, `logits.T${T}`);
      program.record(rec, {});
    }
    await rec.submit();
    const all = await readFloat32(dev.device, out, T * V);
    for (let t = 0; t < T; t++) {
      let bad = 0;
      for (let i = t * V; i < (t + 1) * V; i++) if (!Number.isFinite(all[i]!)) bad++;
      if (bad) throw new NonFiniteLogitsError(model.path, bad, V, t);
    }
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
    program?.destroy();
    dec.destroyKvCache(kv);
    idsBuf.destroy();
    out.destroy();
  }
}
