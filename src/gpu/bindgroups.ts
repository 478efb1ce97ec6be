/**
 * Bind group cache. A decode step binds the same buffers at the same offsets every token (weights, pooled
 * activations and the uniform arena come back in the same order), so its bind groups are reused instead of created
 * per dispatch. Keys use per-object ids; a destroyed buffer's entries are never hit again (a new buffer gets a new
 * id) and the cache is cleared when it grows past its cap.
 */
/** A number per object (buffers, layouts), for keys. */
const ids = new WeakMap<object, number>();
let nextId = 1;
export function idOf(o: object): number {
  let id = ids.get(o);
  if (id === undefined) ids.set(o, (id = nextId++));
  return id;
}

export interface BufferBinding {
  binding: number;
  buffer: GPUBuffer;
  offset?: number;
  size?: number;
}

const MAX_ENTRIES = 8192;

export class BindGroupCache {
  private map = new Map<string, GPUBindGroup>();
  hits = 0;
  misses = 0;

  constructor(private readonly device: GPUDevice) {}

  get(layout: GPUBindGroupLayout, entries: readonly BufferBinding[], label: string): GPUBindGroup {
    let key = String(idOf(layout));
    for (const e of entries) key += `|${e.binding}:${idOf(e.buffer)}:${e.offset ?? 0}:${e.size ?? -1}`;
    let bg = this.map.get(key);
    if (bg) {
      this.hits++;
      return bg;
    }
    this.misses++;
    if (this.map.size >= MAX_ENTRIES) this.map.clear();
    bg = this.device.createBindGroup({
      label,
      layout,
      entries: entries.map((e) => ({ binding: e.binding, resource: { buffer: e.buffer, offset: e.offset ?? 0, ...(e.size !== undefined ? { size: e.size } : {}) } })),
    });
    this.map.set(key, bg);
    return bg;
  }

  clear(): void {
    this.map.clear();
  }
}
