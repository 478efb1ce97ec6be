/**
 * GPU buffers: a size-class pool (released buffers are reused by later acquires of the same class and usage),
 * upload helpers and readback.
 */
import { gpuWait } from './wait.ts';
/** GPUBufferUsage's values from the WebGPU spec (the global exists only once an implementation is loaded). */
export const USAGE = {
  MAP_READ: 0x0001,
  MAP_WRITE: 0x0002,
  COPY_SRC: 0x0004,
  COPY_DST: 0x0008,
  INDEX: 0x0010,
  VERTEX: 0x0020,
  UNIFORM: 0x0040,
  STORAGE: 0x0080,
  INDIRECT: 0x0100,
  QUERY_RESOLVE: 0x0200,
} as const;

export const STORAGE_USAGE = USAGE.STORAGE | USAGE.COPY_SRC | USAGE.COPY_DST;

/** Round a byte size up to its pool size class: multiples of 256 B below 64 KiB, then powers of two / 4 steps. */
export function sizeClass(bytes: number): number {
  const b = Math.max(16, Math.ceil(bytes / 4) * 4);
  if (b <= 65536) return Math.ceil(b / 256) * 256;
  const p = 2 ** Math.floor(Math.log2(b));
  const step = p / 4;
  return Math.ceil(b / step) * step;
}

export class BufferPool {
  private free = new Map<string, GPUBuffer[]>();
  private live = new Set<GPUBuffer>();
  bytesAllocated = 0;

  constructor(private readonly device: GPUDevice) {}

  /** A buffer of at least `bytes` bytes (rounded to its size class). */
  acquire(bytes: number, usage: number = STORAGE_USAGE, label = 'tessera.buffer'): GPUBuffer {
    const size = sizeClass(bytes);
    const key = `${size}:${usage}`;
    const list = this.free.get(key);
    const reused = list?.pop();
    if (reused) {
      reused.label = label;
      this.live.add(reused);
      return reused;
    }
    const maxSize = this.device.limits.maxBufferSize;
    if (size > maxSize) {
      throw new RangeError(`buffer "${label}" needs ${bytes} bytes, over this device's maxBufferSize ${maxSize}`);
    }
    const buf = this.device.createBuffer({ size, usage, label });
    this.bytesAllocated += size;
    this.live.add(buf);
    return buf;
  }

  /** Return a buffer to the pool; it may be handed out again by a later acquire(). */
  release(buf: GPUBuffer): void {
    if (!this.live.delete(buf)) return;
    const key = `${buf.size}:${buf.usage}`;
    let list = this.free.get(key);
    if (!list) this.free.set(key, (list = []));
    list.push(buf);
  }

  destroyAll(): void {
    for (const b of this.live) b.destroy();
    for (const l of this.free.values()) for (const b of l) b.destroy();
    this.live.clear();
    this.free.clear();
  }
}

/** A new storage buffer (copyable both ways) of `bytes` bytes, owned by the caller. */
export function storageBuffer(dev: { device: GPUDevice }, bytes: number, label: string): GPUBuffer {
  return dev.device.createBuffer({ size: Math.max(16, Math.ceil(bytes / 4) * 4), usage: STORAGE_USAGE, label });
}

/** Create a storage buffer holding `data` (padded to 4 bytes). */
export function uploadBuffer(
  device: GPUDevice,
  data: ArrayBufferView,
  label: string,
  usage: number = STORAGE_USAGE,
  minBytes = 0,
): GPUBuffer {
  const size = Math.max(16, Math.ceil(Math.max(data.byteLength, minBytes) / 4) * 4);
  const buf = device.createBuffer({ size, usage, label, mappedAtCreation: true });
  new Uint8Array(buf.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  buf.unmap();
  return buf;
}

/** Write `data` into an existing buffer at `offset` (queue write; 4-byte multiple sizes padded). */
export function writeBuffer(device: GPUDevice, buf: GPUBuffer, data: ArrayBufferView, offset = 0): void {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (bytes.byteLength % 4 === 0) device.queue.writeBuffer(buf, offset, bytes as Uint8Array<ArrayBuffer>);
  else {
    const padded = new Uint8Array(Math.ceil(bytes.byteLength / 4) * 4);
    padded.set(bytes);
    device.queue.writeBuffer(buf, offset, padded);
  }
}

/** Copy `bytes` bytes (default: the whole buffer) of a GPU buffer back to the CPU. */
export async function readBuffer(device: GPUDevice, src: GPUBuffer, bytes = src.size, offset = 0): Promise<ArrayBuffer> {
  const size = Math.ceil(bytes / 4) * 4;
  const staging = device.createBuffer({ size, usage: USAGE.MAP_READ | USAGE.COPY_DST, label: `readback:${src.label}` });
  const enc = device.createCommandEncoder({ label: `readback:${src.label}` });
  enc.copyBufferToBuffer(src, offset, staging, 0, size);
  device.queue.submit([enc.finish()]);
  await gpuWait(staging.mapAsync(0x0001 /* GPUMapMode.READ */));
  const out = staging.getMappedRange().slice(0, bytes);
  staging.unmap();
  staging.destroy();
  return out;
}

export async function readFloat32(device: GPUDevice, src: GPUBuffer, count: number, offset = 0): Promise<Float32Array> {
  return new Float32Array(await readBuffer(device, src, count * 4, offset));
}

export async function readUint32(device: GPUDevice, src: GPUBuffer, count: number, offset = 0): Promise<Uint32Array> {
  return new Uint32Array(await readBuffer(device, src, count * 4, offset));
}
