/**
 * A download cache for model files: `cachedFolder(urlFolder(...), opfsCache())` reads each file from the cache, or
 * copies it there once (range by range: bounded memory, with progress) and reads the copy. In a page the cache is
 * the Origin Private File System, so a model downloads once; `memoryCache()` is for tests. Files known to be absent
 * are remembered too, so a cached model opens with no request to its server.
 */
import { type ModelFile, type ModelFolder } from './files.ts';
import { blobFile } from './web-files.ts';

export interface FileCache {
  /** The cached file under `key`, or undefined. */
  get(key: string): Promise<ModelFile | undefined>;
  /** Copies `from` into the cache under `key` and returns the cached copy. */
  put(key: string, from: ModelFile, onProgress?: (done: number, total: number) => void): Promise<ModelFile>;
  /** Whether `key` was recorded as absent at the source. */
  isMissing(key: string): Promise<boolean>;
  markMissing(key: string): Promise<void>;
}

/** Bytes copied per read: large enough for few requests, small enough to bound memory. */
export const CACHE_CHUNK_BYTES = 16 << 20;

export interface CacheProgress {
  file: string;
  done: number;
  total: number;
}

/** A folder whose files come from `cache`, filled from `folder` on first use. */
export function cachedFolder(folder: ModelFolder, cache: FileCache, opts: { onProgress?: (p: CacheProgress) => void } = {}): ModelFolder {
  const keyOf = (name: string) => `${folder.path}|${name}`;
  return {
    kind: 'folder',
    path: folder.path,
    pathOf: (name) => folder.pathOf(name),
    async open(name) {
      const key = keyOf(name);
      const hit = await cache.get(key);
      if (hit) return { path: folder.pathOf(name), size: hit.size, read: (o, l) => hit.read(o, l) };
      if (await cache.isMissing(key)) return undefined;
      const from = await folder.open(name);
      if (!from) {
        await cache.markMissing(key);
        return undefined;
      }
      return cache.put(key, from, (done, total) => opts.onProgress?.({ file: from.path, done, total }));
    },
    list: () => folder.list(),
  };
}

async function copyChunks(from: ModelFile, write: (bytes: Uint8Array) => Promise<void>, onProgress?: (done: number, total: number) => void): Promise<void> {
  onProgress?.(0, from.size);
  for (let at = 0; at < from.size; at += CACHE_CHUNK_BYTES) {
    const n = Math.min(CACHE_CHUNK_BYTES, from.size - at);
    const bytes = await from.read(at, n);
    if (bytes.byteLength !== n) throw new Error(`${from.path}: got ${bytes.byteLength} bytes at ${at}, wanted ${n}`);
    await write(bytes);
    onProgress?.(at + n, from.size);
  }
}

/** A cache in memory (tests; a page that wants no persistence). */
export function memoryCache(): FileCache & { keys(): string[] } {
  const files = new Map<string, { path: string; bytes: Uint8Array }>();
  const missing = new Set<string>();
  const fileOf = (e: { path: string; bytes: Uint8Array }): ModelFile => ({ path: e.path, size: e.bytes.byteLength, read: async (o, l) => e.bytes.slice(o, o + l) });
  return {
    keys: () => [...files.keys()],
    get: async (key) => {
      const e = files.get(key);
      return e ? fileOf(e) : undefined;
    },
    async put(key, from, onProgress) {
      const bytes = new Uint8Array(from.size);
      let at = 0;
      await copyChunks(from, async (b) => void (bytes.set(b, at), (at += b.byteLength)), onProgress);
      const e = { path: from.path, bytes };
      files.set(key, e);
      return fileOf(e);
    },
    isMissing: async (key) => missing.has(key),
    markMissing: async (key) => void missing.add(key),
  };
}

/** OPFS names: one flat directory, a file per key (percent-encoded) and a `.done` marker once it is complete. */
const opfsName = (key: string) => encodeURIComponent(key).replace(/\./g, '%2E');

/** The Origin Private File System as a FileCache (a page or a worker; `dir`: the OPFS directory used). */
export function opfsCache(dir = 'tessera-models'): FileCache {
  let root: Promise<FileSystemDirectoryHandle> | undefined;
  const folder = () => (root ??= navigator.storage.getDirectory().then((r) => r.getDirectoryHandle(dir, { create: true })));
  const exists = async (name: string) => {
    try {
      await (await folder()).getFileHandle(name);
      return true;
    } catch {
      return false;
    }
  };
  return {
    async get(key) {
      const name = opfsName(key);
      if (!(await exists(`${name}.done`))) return undefined;
      const file = await (await (await folder()).getFileHandle(name)).getFile();
      return blobFile(file, key);
    },
    async put(key, from, onProgress) {
      const d = await folder();
      const name = opfsName(key);
      await d.removeEntry(`${name}.done`).catch(() => undefined);
      const handle = await d.getFileHandle(name, { create: true });
      const w = await handle.createWritable();
      try {
        await copyChunks(from, (b) => w.write(b as Uint8Array<ArrayBuffer>), onProgress);
        await w.close();
      } catch (e) {
        await w.abort().catch(() => undefined);
        throw e;
      }
      await d.getFileHandle(`${name}.done`, { create: true });
      return blobFile(await handle.getFile(), from.path);
    },
    isMissing: (key) => exists(`${opfsName(key)}.missing`),
    async markMissing(key) {
      await (await folder()).getFileHandle(`${opfsName(key)}.missing`, { create: true });
    },
  };
}
