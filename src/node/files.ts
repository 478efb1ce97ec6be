/** Node: model files on disk (a folder or one file) behind the ModelFiles interface of src/formats/files.ts. */
import { open, readdir, stat, writeFile as fsWriteFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ModelFile, ModelFiles, ModelFolder } from '../formats/files.ts';

const CHUNK = 1 << 30;

/** A file on disk of known size; each read opens it (no handle outlives a call). */
export function diskFile(path: string, size: number): ModelFile {
  return {
    path,
    size,
    async read(offset, length) {
      const n = Math.max(0, Math.min(length, size - offset));
      const out = new Uint8Array(n);
      if (n === 0) return out;
      const fh = await open(path, 'r');
      try {
        let done = 0;
        while (done < n) {
          const { bytesRead } = await fh.read(out, done, Math.min(CHUNK, n - done), offset + done);
          if (bytesRead === 0) return out.subarray(0, done);
          done += bytesRead;
        }
      } finally {
        await fh.close();
      }
      return out;
    },
  };
}

/** A folder on disk. */
export function diskFolder(dir: string): ModelFolder {
  return {
    kind: 'folder',
    path: dir,
    pathOf: (name) => join(dir, name),
    async open(name) {
      const p = join(dir, name);
      const st = await stat(p).catch(() => undefined);
      return st?.isFile() ? diskFile(p, st.size) : undefined;
    },
    list: () => readdir(dir),
  };
}

/** What is at a path: a folder, or one file with the folder it sits in; undefined when nothing is there. */
export async function openPath(path: string): Promise<ModelFiles | undefined> {
  const st = await stat(path).catch(() => undefined);
  if (!st) return undefined;
  if (st.isDirectory()) return diskFolder(path);
  return { kind: 'file', path, file: diskFile(path, st.size), folder: diskFolder(dirname(path)) };
}

export async function writeFile(path: string, bytes: Uint8Array): Promise<void> {
  await fsWriteFile(path, bytes);
}
