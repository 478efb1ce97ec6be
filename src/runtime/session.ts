/**
 * A generation session: the GPU state one sequence needs (KV cache, sampler state, penalty history) and the steps
 * that run on it, compiled once: a prefill program per token-count bucket (a prompt of any length up to the bucket
 * reuses it; the padded rows are never attended to by real ones and their KV rows are overwritten by later steps)
 * and a decode program; where attention runs another plan on a short prefix of the cache (Decoder.decodePrefix:
 * one pass instead of flash-decoding's two), a second decode program on that prefix runs while the sequence fits in
 * it. A step writes its few step variables (position, last real row, seed, history count) and replays its dispatch
 * list. Sessions are cached per decoder, KV capacity bucket and sampling settings, so a new generation with the same
 * settings binds the same buffers and compiles nothing (a second sequence running at the same time gets a session of
 * its own).
 */
import { storageBuffer, writeBuffer } from '../gpu/buffers.ts';
import type { Recorder } from '../gpu/recorder.ts';
import type { Decoder, KvCache } from '../models/decoder.ts';
import type { Tensor } from '../ops/runner.ts';
import { recordInterpreted } from '../program/interpret.ts';
import { Program } from '../program/program.ts';
import { dyn, StepBuilder, type OpSink, type StepTensor, type StepVars } from '../program/step.ts';

/** The sampler state's word that holds the number of non-finite logits of the step (sample.wgsl leaves it unused). */
export const NONFINITE_WORD = 3;

/** How a step is recorded: the compiled program (default) or op by op through the contracts (the reference path). */
export type StepPath = 'program' | 'per-op';

/** A 32-bit mix of (seed, step) so each generated position draws its own random number reproducibly. */
export function stepSeed(seed: number, step: number): number {
  let h = (seed ^ Math.imul(step + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** The sampling settings a compiled step depends on (the seed is a step variable). */
export interface SamplingSettings {
  temperature: number;
  topK: number;
  topP: number;
  repetitionPenalty: number;
}

/** Prompt token-count buckets: exact up to 8 (small prompts keep their GEMV kernels), then powers of two. */
export function promptBucket(n: number, capacity: number): number {
  if (n <= 8) return n;
  const b = 2 ** Math.ceil(Math.log2(n));
  return b <= capacity ? b : n;
}

/** KV capacity for a sequence that needs `needed` positions: a power of two >= 256, at most maxPositions. */
export function capacityBucket(needed: number, maxPositions: number): number {
  return Math.min(maxPositions, Math.max(256, 2 ** Math.ceil(Math.log2(Math.max(1, needed)))));
}

interface CompiledStep {
  step: StepBuilder;
  program?: Program;
  ids?: GPUBuffer;
}

export class DecodeSession {
  readonly kv: KvCache;
  readonly state: Tensor;
  readonly history?: Tensor;
  private readonly prefills = new Map<number, CompiledStep>();
  private decode?: CompiledStep;
  /** The first positions of the cache as a cache of their own, and the decode step on them (see decodePrefix). */
  private readonly prefix?: KvCache;
  private decodeOnPrefix?: CompiledStep;
  /** Whether the sample op counts the NaN/Inf logits itself (its plan's countsNonfinite). */
  private readonly samplerCounts: boolean;
  /**
   * The state's words where a decode step's LM head picks the greedy token itself (Decoder.headPickWords; its area
   * starts past the sample op's words, state.shape[0]); undefined where the sample op picks it.
   */
  private readonly pickWords?: number;

  constructor(
    readonly dec: Decoder,
    readonly sampling: SamplingSettings,
    readonly capacity: number,
  ) {
    this.kv = dec.createKvCache(capacity);
    const n = dec.decodePrefix(capacity);
    if (n !== undefined) {
      const view = (t: Tensor): Tensor => ({ ...t, shape: [n, ...t.shape.slice(1)] });
      this.prefix = { capacity: n, dtype: this.kv.dtype, k: this.kv.k.map(view), v: this.kv.v.map(view) };
    }
    const V = dec.cfg.vocabSize;
    const plan = dec.ops.plan('sample', { logits: { dtype: 'float32', shape: [V] } }, this.sampleAttrs());
    const sampleWords = plan.outputs[0]!.shape[0]!;
    this.samplerCounts = plan.derived.countsNonfinite === true;
    // greedy with the count and no penalty: the decode step's head may pick the token (no sample op after it)
    const pickWords = this.samplerCounts && plan.derived.greedy === true && sampling.repetitionPenalty === 1 ? dec.headPickWords(sampleWords, NONFINITE_WORD) : undefined;
    // the state tensor is the sample op's words; the buffer also holds the head's area past them
    this.state = { buffer: storageBuffer(dec.dev, (pickWords ?? sampleWords) * 4, 'sample.state'), dtype: 'uint32', shape: [sampleWords] };
    this.pickWords = pickWords;
    if (sampling.repetitionPenalty !== 1) this.history = { buffer: storageBuffer(dec.dev, capacity * 4, 'sample.history'), dtype: 'uint32', shape: [capacity] };
  }

  private sampleAttrs() {
    // the sampler counts the NaN/Inf logits where it can, unless a penalty comes between (it could overflow one)
    const counted = this.sampling.repetitionPenalty === 1 ? NONFINITE_WORD : -1;
    return { temperature: this.sampling.temperature, top_k: this.sampling.topK, top_p: this.sampling.topP, nonfinite_word: counted };
  }

  /** Penalty (when on) and sampling of one row of logits; the id lands in word 0 of `state`. */
  private emitSampling(s: OpSink, logits: StepTensor): void {
    const row: StepTensor = { ...logits, shape: [this.dec.cfg.vocabSize] };
    // NaN/Inf logits are counted into the state's spare word 3, read back with the token id: by the sampler itself
    // where its plan says it counts (greedy decoding; top-k sampling on CPU adapters; no penalty), else here, before
    // the penalty.
    if (!this.samplerCounts) s.op('count_nonfinite', { x: row, flags: this.state }, { word: NONFINITE_WORD });
    if (this.history) s.op('rep_penalty', { logits: row, history: this.history }, { penalty: this.sampling.repetitionPenalty, count: dyn('hist') });
    s.op('sample', { logits: row, state: this.state }, { ...this.sampleAttrs(), seed: dyn('seed') });
  }

  /** The prefill step of a bucket: ids [B] (padded), forward, the last real row's logits, sampling. */
  private prefillStep(B: number): CompiledStep {
    let c = this.prefills.get(B);
    if (!c) {
      const ids = storageBuffer(this.dec.dev, B * 4, `prefill.ids.${B}`);
      const step = new StepBuilder();
      this.emitSampling(step, this.dec.emitForwardLogits(step, { buffer: ids, dtype: 'uint32', shape: [B] }, this.kv, dyn('pos'), dyn('last')));
      c = { step, ids };
      this.prefills.set(B, c);
    }
    return c;
  }

  /** The decode step on `kv`: the previous token (word 0 of `state`, still on the GPU) in, the next one out. */
  private decodeStep(kv: KvCache): CompiledStep {
    const step = new StepBuilder();
    if (this.history) step.op('copy_elements', { src: this.state, dst: this.history }, { count: 1, src_offset: 0, dst_offset: dyn('hist', -1) });
    const ids: StepTensor = { buffer: this.state.buffer, dtype: 'uint32', shape: [1] };
    if (this.pickWords !== undefined) this.dec.emitForwardLogits(step, ids, kv, dyn('pos'), undefined, { state: { ...this.state, shape: [this.pickWords] }, base: this.state.shape[0]!, word: NONFINITE_WORD });
    else this.emitSampling(step, this.dec.emitForwardLogits(step, ids, kv, dyn('pos')));
    return { step };
  }

  /** Whether a decode step's LM head picks the greedy token itself (no sample op in the step). */
  get headPicks(): boolean {
    return this.pickWords !== undefined;
  }

  /** The label of the decode program that runs the step at position `pos` (the prefix's while pos is in it). */
  decodeLabel(pos: number): string {
    return this.onPrefix(pos) ? `decode.P${this.prefix!.capacity}` : 'decode';
  }

  /** Whether the step at position `pos` runs on the cache prefix. */
  private onPrefix(pos: number): boolean {
    return !!this.prefix && pos < this.prefix.capacity;
  }

  private async record(c: CompiledStep, rec: Recorder, vars: StepVars, path: StepPath, label: string, slot?: number): Promise<void> {
    if (path === 'per-op') return recordInterpreted(this.dec.ops, c.step, rec, vars);
    c.program ??= await Program.compile(this.dec.ops, c.step, label);
    c.program.record(rec, vars, slot);
  }

  /** Record the prompt's step: positions 0..n-1, the first token sampled (seed of step 0). */
  async recordPrefill(rec: Recorder, promptIds: readonly number[], seed: number, path: StepPath = 'program'): Promise<Program | undefined> {
    const n = promptIds.length;
    if (n < 1 || n > this.capacity) throw new RangeError(`the prompt has ${n} tokens; the session holds 1..${this.capacity}`);
    const B = promptBucket(n, this.capacity);
    const c = this.prefillStep(B);
    const padded = new Uint32Array(B);
    padded.set(promptIds);
    writeBuffer(this.dec.dev.device, c.ids!, padded);
    if (this.history) writeBuffer(this.dec.dev.device, this.history.buffer, Uint32Array.from(promptIds));
    await this.record(c, rec, { pos: 0, last: n - 1, seed: stepSeed(seed, 0), hist: n }, path, `prefill.T${B}`);
    return c.program;
  }

  /**
   * Record generated step `s` >= 1: the token sampled at step s-1 goes in at position n + s - 1. `slot`: this step is
   * run `slot` of several recorded into `rec` (Program.record).
   */
  async recordDecode(rec: Recorder, promptLength: number, s: number, seed: number, path: StepPath = 'program', slot?: number): Promise<Program | undefined> {
    const pos = promptLength + s - 1;
    if (pos + 1 > this.capacity) throw new RangeError(`context full: position ${pos} is past the KV cache capacity ${this.capacity}`);
    const c = this.onPrefix(pos) ? (this.decodeOnPrefix ??= this.decodeStep(this.prefix!)) : (this.decode ??= this.decodeStep(this.kv));
    await this.record(c, rec, { pos, seed: stepSeed(seed, s), hist: promptLength + s }, path, this.decodeLabel(pos), slot);
    return c.program;
  }

  /** Programs compiled so far (for stats). */
  programs(): Program[] {
    return [...[...this.prefills.values()].map((c) => c.program), this.decodeOnPrefix?.program, this.decode?.program].filter((p): p is Program => !!p);
  }

  destroy(): void {
    for (const c of [...this.prefills.values(), ...[this.decodeOnPrefix, this.decode].filter((d): d is CompiledStep => !!d)]) {
      c.program?.destroy();
      c.ids?.destroy();
    }
    this.prefills.clear();
    this.decode = undefined;
    this.decodeOnPrefix = undefined;
    this.dec.destroyKvCache(this.kv);
    this.state.buffer.destroy();
    this.history?.buffer.destroy();
  }
}

const MAX_SESSIONS = 2;
const sessions = new WeakMap<Decoder, Map<string, DecodeSession>>();
const inUse = new WeakSet<DecodeSession>();
const temporary = new WeakSet<DecodeSession>();

/**
 * A session for one sequence: the cached one for these settings when it is free (least recently used free ones are
 * destroyed beyond MAX_SESSIONS), else a temporary one of its own (two sequences at once on one model each get GPU
 * state of their own). Give it back with releaseSession.
 */
export function acquireSession(dec: Decoder, o: SamplingSettings, capacity: number): DecodeSession {
  let m = sessions.get(dec);
  if (!m) {
    sessions.set(dec, (m = new Map()));
    dec.onDestroy(() => releaseSessions(dec));
  }
  const settings = { temperature: o.temperature, topK: o.topK, topP: o.topP, repetitionPenalty: o.repetitionPenalty };
  const key = JSON.stringify([capacity, o.temperature, o.topK, o.topP, o.repetitionPenalty]);
  let s = m.get(key);
  if (s && inUse.has(s)) {
    s = new DecodeSession(dec, settings, capacity);
    temporary.add(s);
  } else {
    if (s) m.delete(key);
    else s = new DecodeSession(dec, settings, capacity);
    m.set(key, s);
    for (const [k, old] of m) {
      if (m.size <= MAX_SESSIONS) break;
      if (inUse.has(old)) continue;
      old.destroy();
      m.delete(k);
    }
  }
  inUse.add(s);
  return s;
}

/** Gives a session back after its sequence (and any work it queued) is done. */
export function releaseSession(s: DecodeSession): void {
  inUse.delete(s);
  if (temporary.has(s)) s.destroy();
}

/** Destroys the decoder's cached sessions (KV caches, programs). */
export function releaseSessions(dec: Decoder): void {
  const m = sessions.get(dec);
  if (!m) return;
  for (const s of m.values()) s.destroy();
  m.clear();
}

