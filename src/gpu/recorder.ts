/**
 * Command recorder: many dispatches in one compute pass and one submit. With timestamps on, each dispatch gets
 * its own pass with timestampWrites so its GPU time can be read back by kernel label.
 */
import { gpuWait } from './wait.ts';
import { USAGE } from './buffers.ts';
import type { TesseraDevice } from './device.ts';

export interface Dispatch {
  label: string;
  pipeline: GPUComputePipeline;
  bindGroup: GPUBindGroup;
  workgroups: [number, number, number];
}

export type Step = { kind: 'dispatch'; d: Dispatch } | { kind: 'copy'; src: GPUBuffer; srcOffset: number; dst: GPUBuffer; dstOffset: number; size: number };

/** A frozen list of steps (a compiled program's dispatches), appended to a recorder without copying or checks. */
export interface CommandList {
  readonly steps: readonly Step[];
}

/** Checks a dispatch's workgroup counts against the device limit (once, when a step is built). */
export function dispatchStep(dev: TesseraDevice, d: Dispatch): Step {
  const max = dev.caps.limits.maxComputeWorkgroupsPerDimension!;
  for (const n of d.workgroups) {
    if (!Number.isInteger(n) || n < 0 || n > max) {
      throw new RangeError(`kernel ${d.label}: dispatch size [${d.workgroups.join(', ')}] must be integers in 0..${max} (device.limits.maxComputeWorkgroupsPerDimension)`);
    }
  }
  return { kind: 'dispatch', d };
}

export interface KernelTime {
  label: string;
  ms: number;
}

/** Kernel times summed per label (first-seen order): GPU ms and the number of dispatches. */
export function kernelTotals(times: readonly KernelTime[]): Map<string, { ms: number; dispatches: number }> {
  const out = new Map<string, { ms: number; dispatches: number }>();
  for (const t of times) {
    const e = out.get(t.label) ?? { ms: 0, dispatches: 0 };
    e.ms += t.ms;
    e.dispatches++;
    out.set(t.label, e);
  }
  return out;
}

/**
 * Encodes steps: one compute pass per run of dispatches (copies end a pass), or, with a query set, one pass per
 * dispatch with timestamps at its start and end. Collects the dispatches' labels into `labels` when given.
 */
function encodeSteps(enc: GPUCommandEncoder, steps: readonly Step[], querySet?: GPUQuerySet, labels?: string[], span?: GPUQuerySet): void {
  let pass: GPUComputePassEncoder | undefined;
  let q = 0;
  let lastPipeline: GPUComputePipeline | undefined;
  for (const s of steps) {
    if (s.kind === 'copy') {
      pass?.end();
      pass = undefined;
      enc.copyBufferToBuffer(s.src, s.srcOffset, s.dst, s.dstOffset, s.size);
      continue;
    }
    if (querySet) {
      pass = enc.beginComputePass({ label: s.d.label, timestampWrites: { querySet, beginningOfPassWriteIndex: q, endOfPassWriteIndex: q + 1 } });
      q += 2;
      lastPipeline = undefined;
    } else if (!pass) {
      pass = enc.beginComputePass({ label: 'tessera.pass', ...(span ? { timestampWrites: { querySet: span, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {}) });
      lastPipeline = undefined;
    }
    const d = s.d;
    if (d.pipeline !== lastPipeline) pass.setPipeline((lastPipeline = d.pipeline));
    pass.setBindGroup(0, d.bindGroup);
    const w = d.workgroups;
    if (w[0] > 0 && w[1] > 0 && w[2] > 0) pass.dispatchWorkgroups(w[0], w[1], w[2]);
    labels?.push(d.label);
    if (querySet) {
      pass.end();
      pass = undefined;
    }
  }
  pass?.end();
}

/** Uniform data of all dispatches in a submit goes into a few large buffers, at aligned offsets. */
const ARENA_BYTES = 64 * 1024;

interface ArenaChunk {
  buffer: GPUBuffer;
  cpu: Uint8Array<ArrayBuffer>;
  used: number;
}

export class Recorder {
  private steps: Step[] = [];
  /** Buffers to release back to the pool (or destroy) after the submit completes. */
  private transient: GPUBuffer[] = [];
  private arena: ArenaChunk[] = [];
  private toRelease: GPUBuffer[] = [];

  private readonly timed: boolean;
  private readonly span: boolean;

  /**
   * `timestamps: false` records without per-dispatch timing even where the device has it on (one compute pass).
   * `timestamps: 'span'` records one compute pass with timestamps at its start and end only: submit returns one time,
   * labelled "span", for all its dispatches back to back (as a decode step runs them); the steps must be dispatches.
   */
  constructor(
    private readonly dev: TesseraDevice,
    opts: { timestamps?: boolean | 'span' } = {},
  ) {
    this.span = dev.timestamps && opts.timestamps === 'span';
    this.timed = dev.timestamps && !this.span && opts.timestamps !== false;
  }

  /**
   * Reserve space for one dispatch's uniform struct; the bytes are uploaded with the submit. Returns the binding
   * range to put in the bind group.
   */
  uniform(data: ArrayBuffer): { buffer: GPUBuffer; offset: number; size: number } {
    const align = this.dev.caps.limits.minUniformBufferOffsetAlignment ?? 256;
    const size = Math.max(16, Math.ceil(data.byteLength / 16) * 16);
    let chunk = this.arena[this.arena.length - 1];
    if (!chunk || chunk.used + size > ARENA_BYTES) {
      const bytes = Math.max(ARENA_BYTES, size);
      chunk = {
        buffer: this.dev.buffers.acquire(bytes, USAGE.UNIFORM | USAGE.COPY_DST, 'tessera.uniforms'),
        cpu: new Uint8Array(bytes),
        used: 0,
      };
      this.arena.push(chunk);
    }
    const offset = chunk.used;
    chunk.cpu.set(new Uint8Array(data), offset);
    chunk.used = Math.ceil((offset + size) / align) * align;
    return { buffer: chunk.buffer, offset, size };
  }

  dispatch(d: Dispatch): void {
    this.steps.push(dispatchStep(this.dev, d));
  }

  /** Append a frozen list of steps (they were checked when the list was built). */
  append(list: CommandList): void {
    for (const s of list.steps) this.steps.push(s);
  }

  copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, size: number): void {
    this.steps.push({ kind: 'copy', src, srcOffset, dst, dstOffset, size });
  }

  /**
   * The hot path of a compiled step: encode and submit without a validation error scope (a scope's promise is a GPU
   * wait per submit). Errors surface through the device's uncaptured-error list (TesseraDevice.errors); programs are
   * validated by a checked submit when they are compiled.
   */
  submitUnchecked(): void {
    const steps = this.steps;
    this.steps = [];
    const enc = this.dev.device.createCommandEncoder();
    encodeSteps(enc, steps);
    this.flush(enc);
  }

  /** Uploads the uniform arena, submits `enc`, and hands transient and pooled buffers back. */
  private flush(enc: GPUCommandEncoder): void {
    const { device } = this.dev;
    for (const c of this.arena) device.queue.writeBuffer(c.buffer, 0, c.cpu, 0, Math.min(c.used, c.cpu.byteLength));
    device.queue.submit([enc.finish()]);
    for (const b of this.transient) b.destroy();
    this.transient = [];
    // Pool reuse is ordered by the queue: a later writeBuffer to a reused chunk runs after this submit's work.
    for (const c of this.arena) this.dev.buffers.release(c.buffer);
    this.arena = [];
    for (const b of this.toRelease) this.dev.buffers.release(b);
    this.toRelease = [];
  }

  /** Give this pooled buffer back to the pool once the work recorded so far has been submitted. */
  releaseAfterSubmit(buf: GPUBuffer): void {
    this.toRelease.push(buf);
  }

  /** Destroy this buffer once the work recorded so far has been submitted. */
  destroyAfterSubmit(buf: GPUBuffer): void {
    this.transient.push(buf);
  }

  get dispatchCount(): number {
    return this.steps.filter((s) => s.kind === 'dispatch').length;
  }

  /** Compute passes the recorded steps encode to (copies split passes; timed submits use one pass per dispatch). */
  get passCount(): number {
    let n = 0;
    let open = false;
    for (const s of this.steps) {
      if (s.kind === 'copy') open = false;
      else if (!open || this.timed) {
        n++;
        open = true;
      }
    }
    return n;
  }

  /**
   * Encode everything into one command buffer and submit it. Validation errors raised while encoding or
   * submitting are thrown, naming the kernels in this submit. Returns per-dispatch GPU times when timestamps are on.
   */
  async submit(opts: { wait?: boolean } = {}): Promise<KernelTime[]> {
    const { device } = this.dev;
    const steps = this.steps;
    this.steps = [];
    const nDispatch = steps.filter((s) => s.kind === 'dispatch').length;
    // A query set holds at most 4096 timestamps (2 per dispatch); larger submits run untimed.
    const timed = this.timed && nDispatch * 2 <= 4096;
    let querySet: GPUQuerySet | undefined;
    let resolve: GPUBuffer | undefined;
    if (this.span && steps.some((st) => st.kind === 'copy')) throw new Error('a timestamp span covers one compute pass: it cannot hold copies');
    const nTimes = this.span ? 1 : nDispatch;
    if ((timed || this.span) && nDispatch > 0) {
      querySet = device.createQuerySet({ type: 'timestamp', count: 2 * nTimes });
      resolve = device.createBuffer({ size: 16 * nTimes, usage: USAGE.QUERY_RESOLVE | USAGE.COPY_SRC });
    }
    device.pushErrorScope('validation');
    const enc = device.createCommandEncoder({ label: 'tessera.recorder' });
    const labels: string[] = [];
    if (this.span) encodeSteps(enc, steps, undefined, labels, querySet);
    else encodeSteps(enc, steps, querySet, labels);
    let readback: GPUBuffer | undefined;
    if (querySet && resolve) {
      enc.resolveQuerySet(querySet, 0, 2 * nTimes, resolve, 0);
      readback = device.createBuffer({ size: resolve.size, usage: USAGE.MAP_READ | USAGE.COPY_DST });
      enc.copyBufferToBuffer(resolve, 0, readback, 0, resolve.size);
    }
    this.flush(enc);
    const err = await gpuWait(device.popErrorScope());
    if (err) {
      throw new Error(`GPU validation error in a submit of ${labels.length} dispatches (${[...new Set(labels)].join(', ')}): ${err.message}`);
    }
    const times: KernelTime[] = [];
    if (readback) {
      await gpuWait(readback.mapAsync(0x0001));
      const t = new BigUint64Array(readback.getMappedRange().slice(0));
      readback.unmap();
      if (this.span) times.push({ label: 'span', ms: Number(t[1]! - t[0]!) / 1e6 });
      else for (let i = 0; i < labels.length; i++) times.push({ label: labels[i]!, ms: Number(t[2 * i + 1]! - t[2 * i]!) / 1e6 });
      readback.destroy();
      resolve?.destroy();
      querySet?.destroy();
    } else if (opts.wait) {
      await gpuWait(device.queue.onSubmittedWorkDone());
    }
    return times;
  }
}
