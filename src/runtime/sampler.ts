/**
 * GPU sampling as a list of logits processors on the device: repetition penalty (in place on the logits, when
 * enabled), then the `sample` op (greedy / top-k / top-p with a per-position seed). Only the chosen id is read back.
 */
import { STORAGE_USAGE } from '../gpu/buffers.ts';
import type { Recorder } from '../gpu/recorder.ts';
import type { Decoder } from '../models/decoder.ts';
import type { Tensor } from '../ops/runner.ts';
import type { ResolvedGenerationOptions } from './options.ts';

/** A 32-bit mix of (seed, step) so each generated position draws its own random number reproducibly. */
export function stepSeed(seed: number, step: number): number {
  let h = (seed ^ Math.imul(step + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

export class GpuSampler {
  private state?: GPUBuffer;
  private history?: GPUBuffer;
  private historyLength = 0;

  constructor(
    private readonly dec: Decoder,
    private readonly o: ResolvedGenerationOptions,
    private readonly capacity: number,
  ) {}

  setHistory(ids: readonly number[]): void {
    if (this.o.repetitionPenalty === 1) return;
    this.history ??= this.dec.dev.device.createBuffer({ size: Math.max(16, this.capacity * 4), usage: STORAGE_USAGE, label: 'sample.history' });
    this.dec.dev.device.queue.writeBuffer(this.history, 0, Uint32Array.from(ids));
    this.historyLength = ids.length;
  }

  /** The buffer whose first u32 is the last sampled token (created on first use; sized for the vocabulary). */
  stateBuffer(): GPUBuffer {
    if (this.state) return this.state;
    const plan = this.dec.ops.plan('sample', { logits: { dtype: 'float32', shape: [this.dec.cfg.vocabSize] } }, this.attrs(0));
    this.state = this.dec.dev.device.createBuffer({ size: plan.outputs[0]!.shape[0]! * 4, usage: STORAGE_USAGE, label: 'sample.state' });
    return this.state;
  }

  private attrs(step: number) {
    return { temperature: this.o.temperature, top_k: this.o.topK, top_p: this.o.topP, seed: stepSeed(this.o.seed, step) };
  }

  /**
   * Record penalty + sampling of `logits` [1, vocab] for generated token `step`; returns the buffer whose first u32
   * is the token id. From step 1 on, the previous token (still in that buffer) is appended to the penalty history
   * on the GPU first, so the host need not read it before recording this step.
   */
  async record(rec: Recorder, logits: Tensor, step: number): Promise<GPUBuffer> {
    const ops = this.dec.ops;
    const row: Tensor = { ...logits, shape: [logits.shape[logits.shape.length - 1]!] };
    if (this.history && step > 0 && this.historyLength < this.capacity) {
      rec.copy(this.stateBuffer(), 0, this.history, this.historyLength * 4, 4);
      this.historyLength++;
    }
    if (this.history) {
      const hist: Tensor = { buffer: this.history, dtype: 'uint32', shape: [this.capacity] };
      await ops.record(rec, 'rep_penalty', { logits: row, history: hist }, { penalty: this.o.repetitionPenalty, count: this.historyLength });
    }
    const attrs = this.attrs(step);
    const state = this.stateBuffer();
    await ops.record(rec, 'sample', { logits: row, state: { buffer: state, dtype: 'uint32', shape: [state.size / 4] } }, attrs);
    return state;
  }

  destroy(): void {
    this.state?.destroy();
    this.history?.destroy();
  }
}
