/**
 * The token loop without text: prefill, then decode with the next steps (2 by default: DecodeLoopOptions.depth,
 * TESSERA_DECODE_DEPTH) recorded and submitted before the current token is read back. Steps are compiled programs
 * (src/program) of a cached session (session.ts): a step writes its step variables and replays its dispatch list into
 * one compute pass and one submit. The sampled id stays on the
 * GPU (the next step embeds it and appends it to the penalty history itself), so the host records step t+1 while the
 * GPU runs step t, and reads token t while steps t+1.. run: the GPU stays busy through the host's record, submit and
 * readback latency. The cost is up to `depth` speculative steps after the last token. With `batch` B > 1
 * (DecodeLoopOptions.batch, TESSERA_DECODE_BATCH) B steps are recorded into one submit (each step's variables through
 * its own staging slot: Program.record), so a token costs 1 / B of a submit; a submit's tokens are read back together.
 */
import { U32Readback } from '../gpu/readback.ts';
import { Recorder } from '../gpu/recorder.ts';
import { napUntil, queueIdle, sleepUntil } from '../gpu/wait.ts';
import { readConfig } from '../config.ts';
import type { Decoder } from '../models/decoder.ts';
import type { ResolvedGenerationOptions } from './options.ts';
import { acquireSession, capacityBucket, NONFINITE_WORD, releaseSession, type DecodeSession, type StepPath } from './session.ts';

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

/** The model produced NaN or Inf logits: the sampled token would be meaningless. */
export class NonFiniteLogitsError extends Error {
  override name = 'NonFiniteLogitsError';
  constructor(
    readonly model: string,
    readonly count: number,
    readonly vocab: number,
    readonly position: number,
  ) {
    super(
      `model ${model}: ${count} of ${vocab} logits are NaN or infinite at position ${position}; the weights or the config ` +
        '(rms_norm_eps, rope_theta, scales) give a non-finite forward pass, or f16 activations overflowed (try --quant f32)',
    );
  }
}

export interface DecodeLoopOptions {
  /** Names the model in errors (default: its architecture). */
  label?: string;
  /** Queue steps ahead of reading token t (default true). */
  pipelined?: boolean;
  /** How many steps ahead (default readConfig().decodeDepth, 2). */
  depth?: number;
  /** Decode steps recorded into one submit (default readConfig().decodeBatch, 1; pipelined only). */
  batch?: number;
  /** 'program' (default): compiled steps; 'per-op': every op resolved and recorded each step (the reference path). */
  path?: StepPath;
  /** Called with the session before the first step (benchmarks read its programs' stats). */
  onSession?: (s: DecodeSession) => void;
  /** Filled with the host's time per step (benchmarks: where a token's interval goes). */
  timing?: LoopTiming;
}

/** Host time of the loop, one entry per step in order (ms): record + submit, the blocking sleep, the wait after it. */
export interface LoopTiming {
  submitMs: number[];
  sleepMs: number[];
  waitMs: number[];
}

/**
 * The shortest of the last few intervals between token readbacks: what a step takes when nothing else (a compile at
 * the first step on a new program, a slow host turn) holds it up. An average would carry such a stall into the next
 * steps' sleeps, and a sleep longer than the step makes the next interval longer too.
 */
export class StepIntervals {
  private readonly last: number[] = [];
  constructor(private readonly window = 8) {}
  add(ms: number): void {
    this.last.push(ms);
    if (this.last.length > this.window) this.last.shift();
  }
  /** 0 before the first interval. */
  shortest(): number {
    return this.last.length ? Math.min(...this.last) : 0;
  }
}

/**
 * How long after a token's readback the loop blocks before it polls for the next one, given the step time (the
 * shortest recent interval): most of a long step, none of a short one. The last 10% of the step and 2 ms more are
 * left to polling, to cover the readback's own latency (a map resolves a little after the GPU is done), so a sleep
 * never outlasts the step it waits on: a sleep past the step's end lengthens the interval it measures, and so the
 * next sleep. (Sleeping 80% of an average interval, as before, settles at five times that latency whatever the GPU
 * does; test/decode-wait.test.ts models both rules.)
 */
export function readSleepMs(stepMs: number): number {
  return Math.max(0, 0.9 * stepMs - 2);
}

/**
 * Steps longer than this (ms) are waited on in naps of NAP_MS after the sleep (napUntil); so are the readbacks whose
 * step time is not known yet (the prompt's and the first step's), after FIRST_SPIN_MS of spinning (a GPU's short
 * prompt pays no nap; a CPU adapter's, tens of ms, no longer has a core spinning through it).
 */
const NAP_STEP_MS = 5;
const NAP_MS = 0.25;
const FIRST_SPIN_MS = 2;

/**
 * Yields each sampled token id as it is read back; stops after o.maxTokens tokens or when the KV cache is full
 * (returns 'length' or 'context'). maxTokens 0 runs the prompt (prefill) and yields nothing. The caller stops
 * earlier by leaving the loop (EOS, stop strings).
 */
export async function* decodeTokens(dec: Decoder, promptIds: readonly number[], o: ResolvedGenerationOptions, opts: DecodeLoopOptions = {}): AsyncGenerator<DecodedToken, 'length' | 'context', void> {
  const pipelined = opts.pipelined ?? true;
  const path = opts.path ?? 'program';
  const n = promptIds.length;
  if (n === 0 || n > dec.maxPositions) throw new ContextLengthError(n, dec.maxPositions);
  const session = acquireSession(dec, o, capacityBucket(n + Math.max(1, o.maxTokens), dec.maxPositions));
  try {
    opts.onSession?.(session);
  } catch (e) {
    releaseSession(session);
    throw e;
  }
  const capacity = session.capacity;
  const batch = pipelined ? Math.max(1, Math.floor(opts.batch ?? readConfig().decodeBatch)) : 1;
  // at least `batch` steps queued: a batch is recorded while the steps queued before it run (H200, Llama-3.1-8B Q4_K:
  // 4 steps a submit at depth 2 ran at 299-326 tok/s against 513-515 for 1 or 2)
  const depth = pipelined ? Math.max(batch, 1, Math.floor(opts.depth ?? readConfig().decodeDepth)) : 0;
  // steps step..step+depth+batch-1 can have their token in flight at once
  const readback = new U32Readback(dec.dev, NONFINITE_WORD + 1, depth + batch);
  const errorsBefore = dec.dev.errors.length;
  /** Unchecked submits report validation errors through the device's uncaptured-error list. */
  const checkErrors = () => {
    if (dec.dev.errors.length > errorsBefore) throw new Error(`GPU error while decoding: ${dec.dev.errors.slice(errorsBefore).join('; ')}`);
  };
  /** The first step of each submit in flight -> the submit's step count. */
  const submitCounts = new Map<number, number>();
  /**
   * Record steps first .. first + count - 1 into one submit (step 0 = the prompt, alone); step s's token lands in
   * readback slot s % (depth + batch).
   */
  const submitSteps = async (first: number, count = 1): Promise<void> => {
    const t0 = opts.timing ? performance.now() : 0;
    const rec = new Recorder(dec.dev, { timestamps: false });
    submitCounts.set(first, count);
    let checked = false;
    for (let i = 0; i < count; i++) {
      const step = first + i;
      const program = step === 0 ? await session.recordPrefill(rec, promptIds, o.seed, path) : await session.recordDecode(rec, n, step, o.seed, path, count > 1 ? i : undefined);
      readback.copy(rec, session.state.buffer, step);
      // A program's first run is checked (a validation error names its kernels); later runs skip the error scope.
      if (!program || !program.validated) checked = true;
      if (program) program.validated = true;
    }
    if (checked) await rec.submit();
    else rec.submitUnchecked();
    for (let i = 0; i < count; i++) readback.request(first + i);
    if (opts.timing) for (let i = 0; i < count; i++) opts.timing.submitMs.push((performance.now() - t0) / count);
  };
  // Waiting: block (no event-loop spinning) through most of a long step (readSleepMs), then poll. With several steps
  // a submit, the wait is for the submit's first token (its others come back with it); intervals holds per-step times
  // (a submit's interval over its steps).
  const sleep = readConfig().gpuWait === 'sleep';
  const intervals = new StepIntervals();
  let lastAt = 0;
  const read = async (step: number): Promise<{ id: number; at: number }> => {
    const t0 = opts.timing ? performance.now() : 0;
    const count = submitCounts.get(step); // set for the first step of a submit
    const leading = count !== undefined;
    const stepMs = intervals.shortest();
    if (sleep && leading && lastAt > 0) sleepUntil(lastAt + readSleepMs(stepMs * count));
    const t1 = opts.timing ? performance.now() : 0;
    // long steps (a CPU adapter's) are polled in naps, not spun: the spinning thread would take a core from the shaders
    const nap = sleep && leading && (stepMs === 0 || stepMs > NAP_STEP_MS);
    const words = await readback.read(step, nap ? (p) => napUntil(p, NAP_MS, stepMs === 0 ? FIRST_SPIN_MS : 0) : undefined);
    if (opts.timing) {
      opts.timing.sleepMs.push(t1 - t0);
      opts.timing.waitMs.push(performance.now() - t1);
    }
    const bad = words[NONFINITE_WORD]!;
    if (bad > 0) throw new NonFiniteLogitsError(opts.label ?? dec.cfg.architecture, bad, dec.cfg.vocabSize, n + step - 1);
    const at = performance.now();
    if (leading) {
      submitCounts.delete(step);
      if (lastAt > 0) intervals.add((at - lastAt) / count);
      lastAt = at;
    }
    return { id: words[0]!, at };
  };
  try {
    await submitSteps(0);
    if (o.maxTokens === 0) {
      await read(0);
      return 'length';
    }
    // step s (s >= 1) samples token s: it needs another token wanted and a free position for token s - 1
    const canRun = (s: number) => s < o.maxTokens && n + s <= capacity;
    let submitted = 0;
    for (let step = 0; ; step++) {
      while (submitted < step + depth && canRun(submitted + 1)) {
        let count = 1;
        while (count < batch && canRun(submitted + count + 1)) count++;
        await submitSteps(submitted + 1, count);
        submitted += count;
      }
      const { id, at } = await read(step);
      checkErrors();
      yield { id, at };
      const more = canRun(step + 1);
      if (more && submitted === step) await submitSteps(++submitted);
      if (!more) return step + 1 >= o.maxTokens ? 'length' : 'context';
    }
  } finally {
    // Leaving early (EOS, stop string) may leave up to `depth` speculative steps in flight.
    await queueIdle(dec.dev);
    readback.destroy();
    releaseSession(session);
  }
}
