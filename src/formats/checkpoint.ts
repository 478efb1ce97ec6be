/**
 * A safetensors checkpoint: one file, or shards listed by `model.safetensors.index.json`
 * (`weight_map`: tensor name -> shard file). `openCheckpoint` reads and validates every header up
 * front (so a missing shard or tensor fails at open time, naming it) and reads tensor data on demand.
 */

import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
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
    return { dtype: e.dtype, shape: e.shape.slice(), data: await readEntryBytes(e) };
  }

  async toFloat32(name: string): Promise<Float32Array> {
    const e = this.entry(name);
    return tensorBytesToFloat32(await this.read(name), e.file, name);
  }
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
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

async function openIndex(indexFile: string, path: string): Promise<Checkpoint> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(indexFile, 'utf8'));
  } catch (err) {
    throw new CorruptFileError({ file: indexFile, problem: `not valid JSON (${(err as Error).message})` });
  }
  const weightMap = (json as { weight_map?: unknown } | null)?.weight_map;
  if (typeof weightMap !== 'object' || weightMap === null || Array.isArray(weightMap)) {
    throw new CorruptFileError({ file: indexFile, field: 'weight_map', problem: 'missing or not an object of tensor name -> shard file' });
  }
  const dir = dirname(indexFile);
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
  for (const shard of shards) {
    if (!(await exists(join(dir, shard)))) {
      throw new MissingFileError({
        file: join(dir, shard),
        problem: `shard listed in ${basename(indexFile)} does not exist (needed for tensor "${firstTensorOf.get(shard)}")`,
        fix: 'Download every shard of the checkpoint',
      });
    }
  }
  const headers = await Promise.all(shards.map((s) => readSafetensorsHeader(join(dir, s))));
  const byShard = new Map(shards.map((s, i) => [s, new Map(headers[i]!.tensors.map((e) => [e.name, e]))]));
  const entries: SafetensorsEntry[] = [];
  for (const [tensor, shard] of shardOf) {
    const e = byShard.get(shard)!.get(tensor);
    if (!e) {
      throw new TensorNotFoundError({
        file: join(dir, shard),
        tensor,
        problem: `listed in ${basename(indexFile)} weight_map but absent from this shard`,
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
  return new SafetensorsCheckpoint(path, headers.map((h) => h.file), metadata, entries);
}

async function openFiles(files: readonly string[], path: string): Promise<Checkpoint> {
  const headers = await Promise.all(files.map(readSafetensorsHeader));
  return new SafetensorsCheckpoint(path, files, headers[0]?.metadata ?? {}, mergeEntries(path, headers));
}

/**
 * Open a safetensors checkpoint from a directory (uses model.safetensors.index.json, else
 * model.safetensors, else every *.safetensors file in it), a .safetensors file, or an index file.
 */
export async function openCheckpoint(path: string): Promise<Checkpoint> {
  const st = await stat(path).catch(() => undefined);
  if (!st) throw new MissingFileError({ file: path, problem: 'does not exist' });
  if (st.isFile()) {
    if (path.endsWith('.index.json')) return openIndex(path, path);
    return openFiles([path], path);
  }
  const index = join(path, INDEX_FILE);
  if (await exists(index)) return openIndex(index, path);
  const single = join(path, SINGLE_FILE);
  if (await exists(single)) return openFiles([single], path);
  const all = (await readdir(path)).filter((f) => f.endsWith('.safetensors')).sort();
  if (all.length === 0) {
    throw new MissingFileError({
      file: path,
      problem: `no ${SINGLE_FILE}, ${INDEX_FILE} or other .safetensors file in this directory`,
      fix: 'Point at a directory holding a Hugging Face checkpoint saved with safetensors',
    });
  }
  return openFiles(all.map((f) => join(path, f)), path);
}
