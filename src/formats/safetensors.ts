/**
 * safetensors: an 8-byte little-endian header length N, N bytes of JSON, then the data section.
 * The JSON maps tensor names to { dtype, shape, data_offsets: [begin, end] } (offsets relative to
 * the data section) and may hold "__metadata__": { string: string }.
 *
 * Only the header is read when a file is opened; tensor bytes are read on demand with positioned
 * reads, so large checkpoints are never held in memory whole.
 */

import { getHost } from '../host.ts';
import type { ModelFile } from './files.ts';
import { CorruptFileError, MissingFileError, TruncatedFileError } from './errors.ts';

export const SAFETENSORS_DTYPE_BYTES = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U64: 8,
  U32: 4,
  U16: 2,
  U8: 1,
  BOOL: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
} as const;

export type SafetensorsDType = keyof typeof SAFETENSORS_DTYPE_BYTES;

export function isSafetensorsDType(s: unknown): s is SafetensorsDType {
  return typeof s === 'string' && Object.hasOwn(SAFETENSORS_DTYPE_BYTES, s);
}

/** Name, dtype and shape of a tensor in a checkpoint. */
export interface TensorInfo {
  name: string;
  dtype: SafetensorsDType;
  shape: number[];
}

/** A tensor's bytes, little-endian, row-major. */
export interface TensorData {
  dtype: SafetensorsDType;
  shape: number[];
  data: Uint8Array;
}

/** A tensor entry of one file, with absolute byte offsets into that file. */
export interface SafetensorsEntry extends TensorInfo {
  file: string;
  /** Absolute offset of the first byte in the file. */
  begin: number;
  /** Absolute offset one past the last byte. */
  end: number;
}

export interface SafetensorsHeader {
  file: string;
  fileSize: number;
  /** Absolute offset of the data section (8 + header length). */
  dataStart: number;
  metadata: Record<string, string>;
  /** Entries in header order. */
  tensors: SafetensorsEntry[];
}

/** Largest header accepted (the reference implementation's limit). */
export const MAX_HEADER_BYTES = 100_000_000;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isIndex = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/**
 * Validate the parsed JSON header of `file` and return its entries. `dataStart` and `fileSize`
 * locate the data section; tensors whose data lies past the end of the file are reported.
 */
export function parseSafetensorsHeader(
  file: string,
  json: unknown,
  dataStart: number,
  fileSize: number,
): SafetensorsHeader {
  if (!isObject(json)) {
    throw new CorruptFileError({ file, problem: 'header is not a JSON object', fix: 'Re-export the file' });
  }
  const metadata: Record<string, string> = {};
  const tensors: SafetensorsEntry[] = [];
  for (const [name, value] of Object.entries(json)) {
    if (name === '__metadata__') {
      if (!isObject(value)) {
        throw new CorruptFileError({ file, field: '__metadata__', problem: 'must be an object of strings' });
      }
      for (const [k, v] of Object.entries(value)) {
        if (typeof v !== 'string') {
          throw new CorruptFileError({ file, field: `__metadata__.${k}`, problem: `must be a string, got ${typeof v}` });
        }
        metadata[k] = v;
      }
      continue;
    }
    const bad = (field: string, problem: string): never => {
      throw new CorruptFileError({ file, tensor: name, field, problem });
    };
    if (!isObject(value)) bad('(entry)', 'must be an object with dtype, shape and data_offsets');
    const entry = value as Record<string, unknown>;
    const dtype = entry.dtype;
    if (!isSafetensorsDType(dtype)) {
      bad('dtype', `unknown dtype ${JSON.stringify(dtype)} (known: ${Object.keys(SAFETENSORS_DTYPE_BYTES).join(', ')})`);
    }
    const shape = entry.shape;
    if (!Array.isArray(shape) || !shape.every(isIndex)) bad('shape', 'must be an array of non-negative integers');
    const offsets = entry.data_offsets;
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isIndex) || offsets[0] > offsets[1]) {
      bad('data_offsets', `must be [begin, end] with 0 <= begin <= end, got ${JSON.stringify(offsets)}`);
    }
    const [b, e] = offsets as [number, number];
    const expected = numel(shape as number[]) * SAFETENSORS_DTYPE_BYTES[dtype as SafetensorsDType];
    if (e - b !== expected) {
      bad('data_offsets', `spans ${e - b} bytes but shape ${JSON.stringify(shape)} of ${dtype} needs ${expected}`);
    }
    tensors.push({
      name,
      dtype: dtype as SafetensorsDType,
      shape: (shape as number[]).slice(),
      file,
      begin: dataStart + b,
      end: dataStart + e,
    });
  }

  const byOffset = [...tensors].sort((x, y) => x.begin - y.begin || x.end - y.end);
  let prev: SafetensorsEntry | undefined;
  for (const t of byOffset) {
    if (t.begin === t.end) continue;
    if (prev && t.begin < prev.end) {
      throw new CorruptFileError({
        file,
        tensor: t.name,
        field: 'data_offsets',
        problem: `data overlaps tensor "${prev.name}" (bytes ${t.begin - dataStart}..${t.end - dataStart} vs ..${prev.end - dataStart})`,
        fix: 'Re-export the file',
      });
    }
    if (t.end > fileSize) {
      throw new TruncatedFileError({
        file,
        tensor: t.name,
        problem: `data ends at byte ${t.end} but the file has only ${fileSize} bytes; the file is truncated`,
        fix: 'Download it again (the transfer was probably interrupted)',
      });
    }
    prev = t;
  }
  return { file, fileSize, dataStart, metadata, tensors };
}

/** The header length from the file's first 8 bytes, checked against the limit and the file size. */
function headerLength(file: string, first8: Uint8Array, size: number): number {
  const n = new DataView(first8.buffer, first8.byteOffset, 8).getBigUint64(0, true);
  if (n > BigInt(MAX_HEADER_BYTES)) {
    throw new CorruptFileError({
      file,
      field: 'header length',
      problem: `header length ${n} exceeds the ${MAX_HEADER_BYTES}-byte limit; this is not a safetensors file`,
    });
  }
  const headerLen = Number(n);
  if (8 + headerLen > size) {
    throw new TruncatedFileError({
      file,
      field: 'header length',
      problem: `header of ${headerLen} bytes does not fit in the ${size}-byte file`,
      fix: 'The file is truncated or not a safetensors file; download it again',
    });
  }
  return headerLen;
}

function headerJson(file: string, headerBytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(headerBytes));
  } catch (err) {
    throw new CorruptFileError({
      file,
      field: 'header',
      problem: `header is not valid UTF-8 JSON (${(err as Error).message})`,
    });
  }
}

const tooShort = (file: string, size: number) =>
  new TruncatedFileError({ file, problem: `file has ${size} bytes, fewer than the 8-byte header length` });

/**
 * Validate the header of safetensors bytes held in memory (a fetched file, a Blob's bytes, a test input). `bytes`
 * must hold at least the header; `fileSize` is the whole file's size (default: bytes.byteLength).
 */
export function parseSafetensorsBytes(file: string, bytes: Uint8Array, fileSize = bytes.byteLength): SafetensorsHeader {
  if (fileSize < 8 || bytes.byteLength < 8) throw tooShort(file, Math.min(fileSize, bytes.byteLength));
  const headerLen = headerLength(file, bytes.subarray(0, 8), fileSize);
  if (bytes.byteLength < 8 + headerLen) {
    throw new TruncatedFileError({ file, field: 'header', problem: `header of ${headerLen} bytes but only ${bytes.byteLength - 8} bytes of it were given` });
  }
  return parseSafetensorsHeader(file, headerJson(file, bytes.subarray(8, 8 + headerLen)), 8 + headerLen, fileSize);
}

/** A file by ModelFile, or in Node by path. */
export async function fileAt(source: string | ModelFile): Promise<ModelFile> {
  if (typeof source !== 'string') return source;
  const at = await (await getHost(`reading ${source}`)).openPath(source);
  if (at?.kind !== 'file') throw new MissingFileError({ file: source, problem: 'does not exist or is not a file' });
  return at.file;
}

async function readFully(f: ModelFile, position: number, length: number, tensor?: string): Promise<Uint8Array> {
  const out = await f.read(position, length);
  if (out.byteLength < length) {
    throw new TruncatedFileError({
      file: f.path,
      tensor,
      problem: `unexpected end of file at byte ${position + out.byteLength} (the file shrank or is truncated)`,
    });
  }
  return out;
}

/** Read and validate the header of a .safetensors file (a ModelFile, or in Node a path; reads only the header bytes). */
export async function readSafetensorsHeader(source: string | ModelFile): Promise<SafetensorsHeader> {
  const f = await fileAt(source);
  const file = f.path;
  const size = f.size;
  if (size < 8) throw tooShort(file, size);
  const headerLen = headerLength(file, await readFully(f, 0, 8), size);
  const headerBytes = await readFully(f, 8, headerLen);
  return parseSafetensorsHeader(file, headerJson(file, headerBytes), 8 + headerLen, size);
}

/** Read the bytes of one entry from its file (`from`: the entry's file; default: opened by its path, Node). */
export async function readEntryBytes(entry: SafetensorsEntry, from?: ModelFile): Promise<Uint8Array> {
  if (entry.end === entry.begin) return new Uint8Array(0);
  return readFully(from ?? (await fileAt(entry.file)), entry.begin, entry.end - entry.begin, entry.name);
}

/** A tensor to write. `data` must hold exactly numel(shape) elements of `dtype`, little-endian. */
export interface TensorToWrite extends TensorData {
  name: string;
}

/**
 * Serialize tensors (in the given order) into safetensors bytes. The header is padded with spaces
 * to a multiple of 8 bytes, as the reference writer does.
 */
export function serializeSafetensors(tensors: readonly TensorToWrite[], metadata?: Record<string, string>): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of tensors) {
    const expected = numel(t.shape) * SAFETENSORS_DTYPE_BYTES[t.dtype];
    if (t.data.byteLength !== expected) {
      throw new RangeError(`tensor "${t.name}": ${t.data.byteLength} bytes given, shape ${JSON.stringify(t.shape)} of ${t.dtype} needs ${expected}`);
    }
    if (Object.hasOwn(header, t.name)) throw new RangeError(`tensor "${t.name}" given twice`);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + expected] };
    offset += expected;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.byteLength / 8) * 8;
  if (padded !== json.byteLength) {
    const p = new Uint8Array(padded).fill(0x20);
    p.set(json);
    json = p;
  }
  const out = new Uint8Array(8 + json.byteLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.byteLength), true);
  out.set(json, 8);
  let at = 8 + json.byteLength;
  for (const t of tensors) {
    out.set(t.data, at);
    at += t.data.byteLength;
  }
  return out;
}

/** Write tensors to a .safetensors file (Node: through the host's writeFile; elsewhere use serializeSafetensors). */
export async function writeSafetensors(
  file: string,
  tensors: readonly TensorToWrite[],
  metadata?: Record<string, string>,
): Promise<void> {
  await (await getHost(`writeSafetensors(${file})`)).writeFile(file, serializeSafetensors(tensors, metadata));
}
