/** Pieces the GPU benches share: synthetic weights, and GPU time per call of calls recorded back to back. */
import type { TesseraDevice } from '../src/gpu/device.ts';
import { Recorder } from '../src/gpu/recorder.ts';

/** Bytes per block of each format: fill chunks are whole blocks, so every block gets the header written below. */
const BLOCK: Record<string, number> = { float16: 2, q4_k: 144, q8_0: 34, q6_k: 210 };

/** Random but well-formed weights, written in chunks (a 1 GB tensor never exists on the host). */
export function fillWeights(dev: TesseraDevice, buf: GPUBuffer, fmt: string): void {
  const chunk = new Uint8Array(Math.min(buf.size, BLOCK[fmt]! * 4 * 65536));
  let seed = 0x9e3779b9;
  const next = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0);
  for (let i = 0; i < chunk.length; i += 4) new DataView(chunk.buffer).setUint32(i, next(), true);
  if (fmt === 'float16') {
    // halves with exponents in [-11, -4]: small finite values
    for (let i = 1; i < chunk.length; i += 2) chunk[i] = (chunk[i]! & 0x83) | 0x10;
  } else if (fmt === 'q8_0') {
    // every 34-byte block gets d = 2^-10
    for (let b = 0; b + 34 <= chunk.length; b += 34) {
      chunk[b] = 0x00;
      chunk[b + 1] = 0x14;
    }
  } else if (fmt === 'q4_k') {
    for (let b = 0; b + 144 <= chunk.length; b += 144) {
      chunk[b] = 0x00; // d = 2^-10-ish, dmin likewise
      chunk[b + 1] = 0x14;
      chunk[b + 2] = 0x00;
      chunk[b + 3] = 0x10;
    }
  } else if (fmt === 'q6_k') {
    // d (the last two bytes of the 210) = 2^-10; the int8 sub-block scales stay random
    for (let b = 0; b + 210 <= chunk.length; b += 210) {
      chunk[b + 208] = 0x00;
      chunk[b + 209] = 0x14;
    }
  }
  for (let o = 0; o < buf.size; o += chunk.length) dev.device.queue.writeBuffer(buf, o, chunk, 0, Math.min(chunk.length, buf.size - o));
}

/** Records `calls` calls into `rec` (the calls back to back, as a step runs them). */
export type RecordCalls = (rec: Recorder, calls: number) => Promise<void>;

/** `calls` calls submitted untimed and not waited for, so the GPU clocks are up when the timed submit behind them runs. */
export async function heatGpu(dev: TesseraDevice, record: RecordCalls, calls: number): Promise<void> {
  const rec = new Recorder(dev, { timestamps: false });
  await record(rec, calls);
  void rec.submit();
}

/** GPU ms per call of `calls` calls in one compute pass between two timestamps. */
export async function spanMsPerCall(dev: TesseraDevice, record: RecordCalls, calls: number): Promise<number> {
  const span = new Recorder(dev, { timestamps: 'span' });
  await record(span, calls);
  const [whole] = await span.submit();
  return whole!.ms / calls;
}

/** Shader source builders: f(0) .. f(n - 1), a line each. */
export const lines = (n: number, f: (i: number) => string): string => Array.from({ length: n }, (_, i) => f(i)).join('\n');
