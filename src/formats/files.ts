/**
 * Where model bytes come from, as one interface: a file is a size and ranged reads; a folder opens files by name.
 * Node implements it over the file system (src/node/files.ts); a page over fetch (HTTP range requests), File/Blob
 * objects or OPFS. Readers (safetensors, GGUF, tokenizer, model sources) take these or, in Node, a path.
 */

export interface ModelFile {
  /** Where the file is, for messages (a path, a URL, a picked file's name). */
  readonly path: string;
  readonly size: number;
  /** `length` bytes from `offset` (fewer only at the end of the file). */
  read(offset: number, length: number): Promise<Uint8Array>;
}

export interface ModelFolder {
  readonly kind: 'folder';
  /** Where the folder is, for messages. */
  readonly path: string;
  /** How a file of this folder is named in messages. */
  pathOf(name: string): string;
  /** A file of the folder by relative name; undefined when absent. */
  open(name: string): Promise<ModelFile | undefined>;
  /** Names of the files directly in the folder (to find *.safetensors when there is no index). */
  list(): Promise<string[]>;
}

/** One file given by itself (a .gguf, a .safetensors, an index), with the folder it sits in when known. */
export interface SingleModelFile {
  readonly kind: 'file';
  readonly path: string;
  readonly file: ModelFile;
  readonly folder?: ModelFolder;
}

export type ModelFiles = ModelFolder | SingleModelFile;

/** A file held in memory. */
export function bytesFile(path: string, bytes: Uint8Array): ModelFile {
  return { path, size: bytes.byteLength, read: async (offset, length) => bytes.slice(offset, offset + length) };
}

/** A whole file as UTF-8 text. */
export async function readText(f: ModelFile): Promise<string> {
  return new TextDecoder('utf-8').decode(await f.read(0, f.size));
}

/** Exactly `length` bytes at `offset`, or the error `short` makes (the file is shorter than its header says). */
export async function readExactly(f: ModelFile, offset: number, length: number, short: (at: number) => Error): Promise<Uint8Array> {
  const out = await f.read(offset, length);
  if (out.byteLength < length) throw short(offset + out.byteLength);
  return out;
}

/** Folder and file paths joined with '/', as messages name them. */
export function joinPath(dir: string, name: string): string {
  return dir.endsWith('/') ? `${dir}${name}` : `${dir}/${name}`;
}
