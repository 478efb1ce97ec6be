/**
 * ModelFiles over Web APIs (a page, a Web Worker, or Node 20+ which has fetch and Blob):
 *   urlFolder('https://host/models/x/')   files by URL; reads are HTTP range requests (a server without range support
 *                                         is read whole once and kept, up to maxWholeBytes: past that the read
 *                                         fails naming the file); sizes from HEAD (or a ranged GET)
 *   urlFile('https://host/m.gguf')        one file by URL
 *   blobFile(file) / blobFolder(files)    files the user picked (<input type=file>, webkitdirectory, drag and drop)
 * Reads are ranged everywhere, so a multi-GB model is never held whole in memory.
 */
import { joinPath, type ModelFile, type ModelFolder, type SingleModelFile } from './files.ts';

export interface UrlOptions {
  /** The fetch to use (default: globalThis.fetch). */
  fetch?: typeof fetch;
  /** Extra request headers (an Authorization token for a gated model). */
  headers?: Record<string, string>;
  /**
   * The largest file kept whole in memory when its server ignores range requests (default 1 GiB); a larger file from
   * such a server is refused rather than held whole.
   */
  maxWholeBytes?: number;
}

const MAX_WHOLE_BYTES = 2 ** 30;

/** A server that answers range requests with the whole body, for a file too large to hold in memory. */
export class RangeUnsupportedError extends Error {
  override name = 'RangeUnsupportedError';
  constructor(
    readonly url: string,
    readonly size: number,
    readonly limit: number,
  ) {
    super(
      `${url}: the server ignores HTTP range requests, and the file (${(size / 2 ** 20).toFixed(0)} MiB) is larger than the ${(limit / 2 ** 20).toFixed(0)} MiB ` +
        'that may be held in memory whole; serve it from a server with range support (any static server or the Hugging Face hub) or pick the file locally',
    );
  }
}

export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly url: string,
    readonly status: number,
    what: string,
  ) {
    super(`${what} ${url}: HTTP ${status}`);
  }
}

function totalFromContentRange(v: string | null): number | undefined {
  const m = v ? /\/\s*(\d+)\s*$/.exec(v) : null;
  return m ? Number(m[1]) : undefined;
}

/** The size of the file at `url`, or undefined when it does not exist (404/410). */
async function urlSize(url: string, opts: UrlOptions): Promise<number | undefined> {
  const f = opts.fetch ?? fetch;
  const head = await f(url, { method: 'HEAD', headers: opts.headers });
  if (head.status === 404 || head.status === 410) return undefined;
  const len = head.ok ? head.headers.get('content-length') : null;
  if (len !== null && head.headers.get('content-encoding') === null) return Number(len);
  // No usable HEAD: ask for one byte and read the total from Content-Range.
  const r = await f(url, { headers: { ...opts.headers, Range: 'bytes=0-0' } });
  if (r.status === 404 || r.status === 410) return undefined;
  if (!r.ok) throw new HttpError(url, r.status, 'size of');
  const total = r.status === 206 ? totalFromContentRange(r.headers.get('content-range')) : undefined;
  const whole = r.status === 200 && r.headers.get('content-encoding') === null ? r.headers.get('content-length') : null;
  if (total !== undefined || whole !== null) {
    await r.body?.cancel();
    return total ?? Number(whole);
  }
  return (await r.arrayBuffer()).byteLength;
}

/** A file at a URL of known size: each read is one range request. */
export function urlFileOfSize(url: string, size: number, opts: UrlOptions = {}): ModelFile {
  let whole: Promise<Uint8Array> | undefined;
  return {
    path: url,
    size,
    async read(offset, length) {
      const end = Math.min(size, offset + length);
      if (end <= offset) return new Uint8Array(0);
      if (!whole) {
        const r = await (opts.fetch ?? fetch)(url, { headers: { ...opts.headers, Range: `bytes=${offset}-${end - 1}` } });
        if (r.status === 206) return new Uint8Array(await r.arrayBuffer());
        if (!r.ok) throw new HttpError(url, r.status, 'reading');
        // 200: the server ignores ranges; keep the whole body for later reads, if it is small enough.
        const limit = opts.maxWholeBytes ?? MAX_WHOLE_BYTES;
        if (size > limit) {
          await r.body?.cancel();
          throw new RangeUnsupportedError(url, size, limit);
        }
        whole = r.arrayBuffer().then((b) => new Uint8Array(b));
      }
      return (await whole).slice(offset, end);
    },
  };
}

/** One file by URL (a .gguf, a .safetensors). */
export async function urlFile(url: string, opts: UrlOptions = {}): Promise<SingleModelFile> {
  const size = await urlSize(url, opts);
  if (size === undefined) throw new HttpError(url, 404, 'opening');
  const cut = url.lastIndexOf('/');
  return { kind: 'file', path: url, file: urlFileOfSize(url, size, opts), folder: urlFolder(url.slice(0, cut + 1), opts) };
}

/** A folder by URL (an HF model folder served over HTTP, e.g. https://huggingface.co/<repo>/resolve/main/). */
export function urlFolder(base: string, opts: UrlOptions & { files?: string[] } = {}): ModelFolder {
  const root = base.endsWith('/') ? base : `${base}/`;
  return {
    kind: 'folder',
    path: root,
    pathOf: (name) => new URL(name, root).href,
    async open(name) {
      const url = new URL(name, root).href;
      const size = await urlSize(url, opts);
      return size === undefined ? undefined : urlFileOfSize(url, size, opts);
    },
    // HTTP cannot list a folder: the caller may name the files; otherwise model.safetensors or its index must exist.
    list: async () => opts.files ?? [],
  };
}

/** A Blob or File (its slices are read lazily). */
export function blobFile(blob: Blob, name = (blob as File).name ?? 'blob'): ModelFile {
  return {
    path: name,
    size: blob.size,
    read: async (offset, length) => new Uint8Array(await blob.slice(offset, Math.min(blob.size, offset + length)).arrayBuffer()),
  };
}

/** A single picked file (a .gguf). */
export function blobModelFile(file: File): SingleModelFile {
  return { kind: 'file', path: file.name, file: blobFile(file) };
}

/**
 * Picked files as a folder, by name: a folder chosen with <input webkitdirectory> (webkitRelativePath
 * "model/config.json": the first path segment is dropped) or several files chosen together.
 */
export function blobFolder(files: Iterable<File>, path = 'picked files'): ModelFolder {
  const byName = new Map<string, File>();
  for (const f of files) {
    const rel = (f as File & { webkitRelativePath?: string }).webkitRelativePath;
    const name = rel ? rel.split('/').slice(1).join('/') : f.name;
    byName.set(name || f.name, f);
  }
  return {
    kind: 'folder',
    path,
    pathOf: (name) => joinPath(path, name),
    open: async (name) => {
      const f = byName.get(name);
      return f ? blobFile(f, joinPath(path, name)) : undefined;
    },
    list: async () => [...byName.keys()].filter((n) => !n.includes('/')),
  };
}
