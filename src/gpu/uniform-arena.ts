/**
 * A compiled program's uniform memory: every dispatch's uniform struct at an aligned offset of one GPU buffer, with a
 * CPU mirror. Structs whose values change per step are placed first, so a step uploads one prefix with one
 * writeBuffer; identical static structs share a slot.
 */
import { USAGE } from './buffers.ts';
import type { TesseraDevice } from './device.ts';

export interface UniformSlot {
  buffer: GPUBuffer;
  offset: number;
  size: number;
}

export class UniformArena {
  readonly buffer: GPUBuffer;
  readonly cpu: Uint8Array<ArrayBuffer>;
  readonly view: DataView;
  private staging: GPUBuffer | undefined;

  private constructor(
    private readonly dev: TesseraDevice,
    bytes: number,
    label: string,
  ) {
    const size = Math.max(256, Math.ceil(bytes / 16) * 16);
    this.buffer = dev.device.createBuffer({ size, usage: USAGE.UNIFORM | USAGE.COPY_DST, label });
    this.cpu = new Uint8Array(size);
    this.view = new DataView(this.cpu.buffer);
  }

  /**
   * Lays out `structs` (byte sizes, in order) at offsets aligned to the device's minUniformBufferOffsetAlignment and
   * returns the arena with each struct's offset.
   */
  static layout(dev: TesseraDevice, sizes: readonly number[], label: string): { arena: UniformArena; offsets: number[] } {
    const align = dev.caps.limits.minUniformBufferOffsetAlignment ?? 256;
    const offsets: number[] = [];
    let end = 0;
    for (const s of sizes) {
      offsets.push(end);
      end = Math.ceil((end + Math.max(16, s)) / align) * align;
    }
    return { arena: new UniformArena(dev, end, label), offsets };
  }

  /** Copies a struct's bytes into the mirror at `offset`. */
  set(offset: number, data: ArrayBuffer): void {
    this.cpu.set(new Uint8Array(data), offset);
  }

  slot(offset: number, size: number): UniformSlot {
    return { buffer: this.buffer, offset, size: Math.max(16, Math.ceil(size / 16) * 16) };
  }

  /**
   * Stages bytes [0, end) of the mirror in slot `slot` of a staging buffer and returns the copy that puts them into
   * the arena: for several runs recorded into one submit, where each run's values must land between the runs (an
   * upload lands before the whole submit). Slots are queue-ordered like uploads: a slot's next write lands after the
   * submits recorded before it, so one submit's runs need distinct slots and the next submit may reuse them.
   */
  stage(end: number, slot: number): { src: GPUBuffer; srcOffset: number; dst: GPUBuffer; size: number } {
    const size = Math.ceil(Math.min(end, this.cpu.byteLength) / 4) * 4;
    const stride = Math.ceil(size / 256) * 256;
    if (!this.staging || this.staging.size < stride * (slot + 1)) {
      this.staging?.destroy();
      this.staging = this.dev.device.createBuffer({ size: stride * Math.max(4, slot + 1), usage: USAGE.COPY_SRC | USAGE.COPY_DST, label: `${this.buffer.label}.staging` });
    }
    if (size > 0) this.dev.device.queue.writeBuffer(this.staging, stride * slot, this.cpu, 0, size);
    return { src: this.staging, srcOffset: stride * slot, dst: this.buffer, size };
  }

  /** Uploads bytes [0, end) of the mirror (queue-ordered: it lands after the work submitted before it). */
  upload(end = this.cpu.byteLength): void {
    if (end > 0) this.dev.device.queue.writeBuffer(this.buffer, 0, this.cpu, 0, Math.min(end, this.cpu.byteLength));
  }

  get bytes(): number {
    return this.cpu.byteLength;
  }

  destroy(): void {
    this.buffer.destroy();
    this.staging?.destroy();
  }
}
