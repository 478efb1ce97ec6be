/**
 * A safetensors checkpoint: one file, or shards listed by `model.safetensors.index.json`
 * (`weight_map`: tensor name -> shard file). `openCheckpoint` reads and validates every header up
 * front (so a missing shard or tensor fails at open time, naming it) and reads tensor data on demand. Files come
 * through the ModelFiles interface (src/formats/files.ts), or in Node from a path.
 */

import { getHost } from '../host.ts';
import { readText, type ModelFile, type ModelFiles, type ModelFolder } from './files.ts';
import { CorruptFileError, MissingFileError, TensorNotFoundError, UnsupportedFormatError } from './errors.ts';
import { bf16BytesToF32, f16BytesToF32, f32BytesToF32 } from './f16.ts';
import {
  readEntryBytes,
  readSafetensorsHeader,
  type SafetensorsEntry,
  type SafetensorsHeader,
  type TensorData,
  type TensorInfo,
} from './safetensors.ts';

export const INDEX_FILE = 'model.safetensors.index.json';
export const SINGLE_FILE = 'model.safetensors';

export interface Checkpoint {
  /** The directory or file the checkpoint was opened from. */
  readonly path: string;
  /** The safetensors files, in shard order. */
  readonly files: readonly string[];
  /** `__metadata__` of the first file, merged with the index's `metadata` (stringified). */
  readonly metadata: Readonly<Record<string, string>>;
  /** Every tensor: name, dtype, shape. */
  readonly tensors: readonly TensorInfo[];
  has(name: string): boolean;
  /** Info of one tensor; throws TensorNotFoundError naming the tensor. */
  info(name: string): TensorInfo;
  /** Read one tensor's bytes from disk. */
  read(name: string): Promise<TensorData>;
  /** Read one F32/F16/BF16/F64 tensor as f32. */
  toFloat32(name: string): Promise<Float32Array>;
}

/** Convert tensor bytes of a float dtype to f32. */
export function tensorBytesToFloat32(t: TensorData, file: string, name: string): Float32Array {
  switch (t.dtype) {
    case 'F32':
      return f32BytesToF32(t.data);
    case 'F16':
      return f16BytesToF32(t.data);
    case 'BF16':
      return bf16BytesToF32(t.data);
    case 'F64': {
      const f64 = new Float64Array(t.data.byteLength / 8);
      new Uint8Array(f64.buffer).set(t.data);
      return Float32Array.from(f64);
    }
    default:
      throw new UnsupportedFormatError({
        file,
        tensor: name,
        problem: `dtype ${t.dtype} cannot be converted to f32 (supported: F32, F16, BF16, F64)`,
        fix: 'Read it with read() and interpret the bytes directly',
      });
  }
}

class SafetensorsCheckpoint implements Checkpoint {
  readonly tensors: readonly TensorInfo[];
  private readonly byName: ReadonlyMap<string, SafetensorsEntry>;

  constructor(
    readonly path: string,
    readonly files: readonly string[],
    readonly metadata: Readonly<Record<string, string>>,
    entries: readonly SafetensorsEntry[],
    private readonly handles: ReadonlyMap<string, ModelFile>,
  ) {
    this.byName = new Map(entries.map((e) => [e.name, e]));
    this.tensors = entries.map(({ name, dtype, shape }) => ({ name, dtype, shape }));
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  private entry(name: string): SafetensorsEntry {
    const e = this.byName.get(name);
    if (!e) {
      const leaf = name.split('.').slice(-2).join('.');
      const similar = [...this.byName.keys()].filter((n) => n.endsWith(leaf)).slice(0, 3);
      throw new TensorNotFoundError({
        file: this.path,
        tensor: name,
        problem: `not in this checkpoint (${this.byName.size} tensors)`,
        fix: similar.length ? `Similar names: ${similar.join(', ')}` : undefined,
      });
    }
    return e;
  }

  info(name: string): TensorInfo {
    const { dtype, shape } = this.entry(name);
    return { name, dtype, shape: shape.slice() };
  }

  async read(name: string): Promise<TensorData> {
    const e = this.entry(name);
    return { dtype: e.dtype, shape: e.shape.slice(), data: await readEntryBytes(e, this.handles.get(e.file)) };
  }

  async toFloat32(name: string): Promise<Float32Array> {
    const e = this.entry(name);
    return tensorBytesToFloat32(await this.read(name), e.file, name);
  }
}

function mergeEntries(path: string, headers: readonly SafetensorsHeader[]): SafetensorsEntry[] {
  const seen = new Map<string, string>();
  const out: SafetensorsEntry[] = [];
  for (const h of headers) {
    for (const e of h.tensors) {
      const other = seen.get(e.name);
      if (other !== undefined) {
        throw new CorruptFileError({ file: path, tensor: e.name, problem: `appears in both ${other} and ${h.file}` });
      }
      seen.set(e.name, h.file);
      out.push(e);
    }
  }
  return out;
}

const baseName = (p: string) => p.slice(p.lastIndexOf('/') + 1);

async function openIndex(index: ModelFile, folder: ModelFolder | undefined, path: string): Promise<Checkpoint> {
  const indexFile = index.path;
  let json: unknown;
  try {
    json = JSON.parse(await readText(index));
  } catch (err) {
    throw new CorruptFileError({ file: indexFile, problem: `not valid JSON (${(err as Error).message})` });
  }
  const weightMap = (json as { weight_map?: unknown } | null)?.weight_map;
  if (typeof weightMap !== 'object' || weightMap === null || Array.isArray(weightMap)) {
    throw new CorruptFileError({ file: indexFile, field: 'weight_map', problem: 'missing or not an object of tensor name -> shard file' });
  }
  const shardOf = new Map<string, string>();
  const firstTensorOf = new Map<string, string>();
  for (const [tensor, shard] of Object.entries(weightMap as Record<string, unknown>)) {
    if (typeof shard !== 'string' || shard.length === 0) {
      throw new CorruptFileError({ file: indexFile, field: `weight_map["${tensor}"]`, problem: 'shard file name must be a non-empty string' });
    }
    shardOf.set(tensor, shard);
    if (!firstTensorOf.has(shard)) firstTensorOf.set(shard, tensor);
  }
  const shards = [...firstTensorOf.keys()].sort();
  const shardPath = (shard: string) => folder?.pathOf(shard) ?? shard;
  const files: ModelFile[] = [];
  for (const shard of shards) {
    const f = await folder?.open(shard);
    if (!f) {
      throw new MissingFileError({
        file: shardPath(shard),
        problem: `shard listed in ${baseName(indexFile)} does not exist (needed for tensor "${firstTensorOf.get(shard)}")`,
        fix: 'Download every shard of the checkpoint',
      });
    }
    files.push(f);
  }
  const headers = await Promise.all(files.map((f) => readSafetensorsHeader(f)));
  const byShard = new Map(shards.map((s, i) => [s, new Map(headers[i]!.tensors.map((e) => [e.name, e]))]));
  const entries: SafetensorsEntry[] = [];
  for (const [tensor, shard] of shardOf) {
    const e = byShard.get(shard)!.get(tensor);
    if (!e) {
      throw new TensorNotFoundError({
        file: shardPath(shard),
        tensor,
        problem: `listed in ${baseName(indexFile)} weight_map but absent from this shard`,
        fix: 'The index and shards are from different revisions; download them again together',
      });
    }
    entries.push(e);
  }
  const meta = (json as { metadata?: unknown }).metadata;
  const metadata: Record<string, string> = { ...(headers[0]?.metadata ?? {}) };
  if (typeof meta === 'object' && meta !== null) {
    for (const [k, v] of Object.entries(meta)) metadata[k] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  return new SafetensorsCheckpoint(path, headers.map((h) => h.file), metadata, entries, new Map(files.map((f) => [f.path, f])));
}

async function openFiles(files: readonly ModelFile[], path: string): Promise<Checkpoint> {
  const headers = await Promise.all(files.map((f) => readSafetensorsHeader(f)));
  return new SafetensorsCheckpoint(path, headers.map((h) => h.file), headers[0]?.metadata ?? {}, mergeEntries(path, headers), new Map(files.map((f) => [f.path, f])));
}

/**
 * Open a safetensors checkpoint from a folder (uses model.safetensors.index.json, else model.safetensors, else every
 * *.safetensors file in it), a .safetensors file, or an index file: as ModelFiles, or in Node as a path.
 */
export async function openCheckpoint(source: string | ModelFiles): Promise<Checkpoint> {
  let at: ModelFiles | undefined;
  if (typeof source === 'string') {
    at = await (await getHost(`openCheckpoint(${source})`)).openPath(source);
    if (!at) throw new MissingFileError({ file: source, problem: 'does not exist' });
  } else {
    at = source;
  }
  const path = at.path;
  if (at.kind === 'file') {
    if (path.endsWith('.index.json')) return openIndex(at.file, at.folder, path);
    return openFiles([at.file], path);
  }
  const folder = at;
  const index = await folder.open(INDEX_FILE);
  if (index) return openIndex(index, folder, path);
  const single = await folder.open(SINGLE_FILE);
  if (single) return openFiles([single], path);
  const all = (await folder.list()).filter((f) => f.endsWith('.safetensors')).sort();
  if (all.length === 0) {
    throw new MissingFileError({
      file: path,
      problem: `no ${SINGLE_FILE}, ${INDEX_FILE} or other .safetensors file in this directory`,
      fix: 'Point at a directory holding a Hugging Face checkpoint saved with safetensors',
    });
  }
  const files: ModelFile[] = [];
  for (const name of all) {
    const f = await folder.open(name);
    if (f) files.push(f);
  }
  return openFiles(files, path);
}
