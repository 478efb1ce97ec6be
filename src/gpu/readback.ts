/**
 * Small readbacks in flight: a ring of MAP_READ staging buffers for values a step leaves on the GPU (the sampled
 * token id). A map is requested right after the submit that fills its slot (Dawn completes a map once the work
 * submitted before the request is done; asking later would also wait for work queued since).
 */
import { USAGE } from './buffers.ts';
import type { TesseraDevice } from './device.ts';
import type { Recorder } from './recorder.ts';
import { gpuWait } from './wait.ts';

export class U32Readback {
  private readonly staging: GPUBuffer[];
  private readonly pending: (Promise<void> | undefined)[];

  constructor(
    dev: TesseraDevice,
    private readonly words = 1,
    slots = 2,
  ) {
    this.staging = Array.from({ length: slots }, (_, i) => dev.device.createBuffer({ size: Math.max(16, words * 4), usage: USAGE.MAP_READ | USAGE.COPY_DST, label: `readback.${i}` }));
    this.pending = this.staging.map(() => undefined);
  }

  /** Record a copy of `words` u32 from `src` into slot `slot`. */
  copy(rec: Recorder, src: GPUBuffer, slot: number, srcOffset = 0): void {
    rec.copy(src, srcOffset, this.staging[slot % this.staging.length]!, 0, this.words * 4);
  }

  /** Request the map of a slot (call right after the submit that fills it). */
  request(slot: number): void {
    const i = slot % this.staging.length;
    const p = gpuWait(this.staging[i]!.mapAsync(0x0001 /* GPUMapMode.READ */));
    p.catch(() => {}); // abandoned when the caller stops early (the buffer is destroyed)
    this.pending[i] = p;
  }

  /** Wait for a requested slot (through `wait`, default a plain await) and return its words (the slot is unmapped for reuse). */
  async read(slot: number, wait?: (p: Promise<void>) => Promise<void>): Promise<Uint32Array> {
    const i = slot % this.staging.length;
    const p = this.pending[i];
    if (!p) throw new Error(`readback slot ${i} was not requested`);
    await (wait ? wait(p) : p);
    this.pending[i] = undefined;
    const b = this.staging[i]!;
    const out = new Uint32Array(b.getMappedRange(0, this.words * 4).slice(0));
    b.unmap();
    return out;
  }

  destroy(): void {
    for (const b of this.staging) b.destroy();
  }
}
