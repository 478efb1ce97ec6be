/**
 * GGUF reader. The header (metadata and tensor infos) is parsed by ./gguf-header.ts (a port of `@huggingface/gguf`'s
 * parser reading through a ModelFile); this module validates tensor types, sizes and bounds against the file and
 * reads tensor data on demand. Files come as a ModelFile (any source) or, in Node, a path.
 *
 * Shapes: ggml lists dimensions fastest-first (`ne`, ne[0] = row length). `shape` is the same
 * dimensions outermost-first (row-major, as PyTorch / safetensors write them), i.e. `ne` reversed:
 * a Hugging Face weight of shape [out, in] is stored with ne = [in, out] and reported here as
 * shape [out, in].
 */

import type { MetadataValue } from '@huggingface/gguf';
import { getHost } from '../host.ts';
import { bytesFile, type ModelFile } from './files.ts';
import { parseGgufHeader, type ParsedGgufHeader } from './gguf-header.ts';
import { CorruptFileError, MissingFileError, TensorNotFoundError, TruncatedFileError, UnsupportedFormatError } from './errors.ts';
import { dequantize } from './quant/index.ts';
import { ggmlByteSize, ggmlTypeInfo, type GgmlTypeInfo } from './quant/ggml-types.ts';

export const GGUF_DEFAULT_ALIGNMENT = 32;
/** Fields @huggingface/gguf puts into `metadata` that are header fields, not key/values. */
const HEADER_FIELDS = new Set(['version', 'tensor_count', 'kv_count']);

export interface GgufTensorInfo {
  name: string;
  /** ggml type id (GgmlType). */
  type: number;
  typeName: string;
  /** Dimensions fastest-first, as stored. */
  ne: number[];
  /** Dimensions outermost-first (ne reversed). */
  shape: number[];
  nElements: number;
  /** Absolute byte offset of the data in the file. */
  offset: number;
  byteSize: number;
}

export interface GgufFile {
  readonly path: string;
  readonly version: number;
  /** Key/value metadata (without version / tensor_count / kv_count). */
  readonly metadata: Readonly<Record<string, MetadataValue>>;
  readonly alignment: number;
  /** Absolute offset of the tensor data section. */
  readonly dataOffset: number;
  readonly tensors: readonly GgufTensorInfo[];
  has(name: string): boolean;
  info(name: string): GgufTensorInfo;
  /** The tensor's raw bytes (quantized blocks as stored). */
  readRaw(name: string): Promise<Uint8Array>;
  /** The tensor dequantized to f32 (F32, F16, BF16, Q8_0, Q4_K, Q6_K). */
  toFloat32(name: string): Promise<Float32Array>;
}

/** ggml types without a block layout here, named for messages (ids as in ggml.h). */
const OTHER_GGML_TYPE_NAMES: Readonly<Record<number, string>> = {
  16: 'IQ2_XXS', 17: 'IQ2_XS', 18: 'IQ3_XXS', 19: 'IQ1_S', 20: 'IQ4_NL', 21: 'IQ3_S', 22: 'IQ2_S', 23: 'IQ4_XS', 29: 'IQ1_M', 34: 'TQ1_0', 35: 'TQ2_0', 40: 'NVFP4',
};

function typeName(id: number): string {
  return ggmlTypeInfo(id)?.name ?? OTHER_GGML_TYPE_NAMES[id] ?? `unknown type ${id}`;
}

type ParsedGguf = ParsedGgufHeader;
/** Read `length` bytes at `offset` (the tensor data of a file on disk or of bytes in memory). */
type ReadAt = (offset: number, length: number, tensor: string) => Promise<Uint8Array>;

/**
 * The tensor and key/value counts of the fixed header checked against the file size before the parser runs: in
 * GGUF v2/v3 every tensor info takes at least 24 bytes and every key/value at least 13 (v1: 20 and 9), so a count no
 * file of this size can hold is refused at once (the parser would otherwise walk millions of zero-filled entries).
 */
function checkCounts(path: string, given: Uint8Array, fileSize: number): void {
  if (given.length < 8) return; // the parser reports a missing magic / version
  const first = new Uint8Array(24);
  first.set(given.subarray(0, 24));
  const dv = new DataView(first.buffer);
  const le = (dv.getUint32(4, true) & 0xffff) !== 0; // the parser's endianness rule
  const version = dv.getUint32(4, le);
  let need: bigint;
  let tensors: bigint;
  let kvs: bigint;
  if (version === 1) {
    tensors = BigInt(dv.getUint32(8, le));
    kvs = BigInt(dv.getUint32(12, le));
    need = 16n + tensors * 20n + kvs * 9n;
  } else if (version === 2 || version === 3) {
    tensors = dv.getBigUint64(8, le);
    kvs = dv.getBigUint64(16, le);
    need = 24n + tensors * 24n + kvs * 13n;
  } else {
    return; // the parser reports the unsupported version
  }
  if (need > BigInt(fileSize)) {
    throw new TruncatedFileError({
      file: path,
      field: 'header',
      problem: `declares ${tensors} tensors and ${kvs} metadata entries, which need at least ${need} bytes, but the file has ${fileSize}`,
      fix: 'The file is truncated or corrupt; download it again',
    });
  }
}

async function parseHeader(file: ModelFile): Promise<ParsedGguf> {
  const path = file.path;
  const fileSize = file.size;
  checkCounts(path, await file.read(0, 24), fileSize);
  try {
    return await parseGgufHeader(file);
  } catch (err) {
    const msg = (err as Error).message;
    if (err instanceof RangeError || /chunk fetches|out of bounds|Offset is outside/i.test(msg)) {
      throw new TruncatedFileError({
        file: path,
        field: 'header',
        problem: `the GGUF header runs past the end of the ${fileSize}-byte file (${msg})`,
        fix: 'Download the file again',
      });
    }
    throw new CorruptFileError({ file: path, field: 'header', problem: `not a readable GGUF file: ${msg}` });
  }
}

/** Open a GGUF file (a ModelFile, or in Node a path): parse its header and validate every tensor's type and byte range. */
export async function openGguf(source: string | ModelFile): Promise<GgufFile> {
  let file: ModelFile;
  if (typeof source === 'string') {
    const at = await (await getHost(`openGguf(${source})`)).openPath(source);
    if (at?.kind !== 'file') throw new MissingFileError({ file: source, problem: 'does not exist or is not a file' });
    file = at.file;
  } else {
    file = source;
  }
  const readAt: ReadAt = async (offset, length, tensor) => {
    const out = await file.read(offset, length);
    if (out.byteLength < length) throw new TruncatedFileError({ file: file.path, tensor, problem: `unexpected end of file at byte ${offset + out.byteLength}` });
    return out;
  };
  return ggufFromHeader(file.path, await parseHeader(file), file.size, readAt);
}

/** A GGUF file held in memory (fetched bytes, a Blob's bytes, a test input), validated as openGguf validates a file. */
export async function parseGgufBytes(name: string, bytes: Uint8Array): Promise<GgufFile> {
  return openGguf(bytesFile(name, bytes));
}

function ggufFromHeader(path: string, parsed: ParsedGguf, fileSize: number, readAt: ReadAt): GgufFile {
  // The parser zero-fills reads past the end of a local file, so check the header fitted.
  const headerEnd = parsed.tensorInfoByteRange[1];
  if (headerEnd > fileSize) {
    throw new TruncatedFileError({
      file: path,
      field: 'header',
      problem: `the GGUF header (metadata and tensor infos) needs ${headerEnd} bytes but the file has ${fileSize}`,
      fix: 'The file is truncated; download it again',
    });
  }
  const all = parsed.metadata as Record<string, MetadataValue>;
  const version = Number(all.version);
  const metadata = Object.fromEntries(Object.entries(all).filter(([k]) => !HEADER_FIELDS.has(k)));
  const alignment = Number(metadata['general.alignment'] ?? GGUF_DEFAULT_ALIGNMENT);
  const dataOffset = Number(parsed.tensorDataOffset);

  const tensors: GgufTensorInfo[] = parsed.tensorInfos.map((ti) => {
    const info: GgmlTypeInfo | undefined = ggmlTypeInfo(ti.dtype);
    if (!info) {
      throw new UnsupportedFormatError({
        file: path,
        tensor: ti.name,
        problem: `ggml type ${typeName(ti.dtype)} (id ${ti.dtype}) has no known block layout here`,
        fix: 'Re-quantize the model to F16, BF16, Q8_0, Q4_K or Q6_K',
      });
    }
    const ne = ti.shape.map(Number);
    const nElements = ne.reduce((a, b) => a * b, 1);
    // A scalar (no dims) is one row of one element.
    const rowLength = ne.length > 0 ? ne[0]! : 1;
    if (rowLength % info.blockSize !== 0) {
      throw new CorruptFileError({
        file: path,
        tensor: ti.name,
        problem: `row length ne[0] = ${rowLength} is not a multiple of the ${info.name} block size ${info.blockSize}`,
      });
    }
    if (!Number.isSafeInteger(nElements)) {
      throw new CorruptFileError({ file: path, tensor: ti.name, problem: `shape [${ne.join(', ')}] has more elements than any file can hold` });
    }
    const rel = Number(ti.offset);
    if (rel % alignment !== 0) {
      throw new CorruptFileError({ file: path, tensor: ti.name, problem: `data offset ${rel} is not a multiple of general.alignment ${alignment}` });
    }
    return {
      name: ti.name,
      type: ti.dtype,
      typeName: info.name,
      ne,
      shape: ne.slice().reverse(),
      nElements,
      offset: dataOffset + rel,
      byteSize: ggmlByteSize(info, nElements),
    };
  });

  const byOffset = [...tensors].sort((a, b) => a.offset - b.offset);
  let prev: GgufTensorInfo | undefined;
  for (const t of byOffset) {
    if (t.byteSize === 0) continue;
    if (prev && t.offset < prev.offset + prev.byteSize) {
      throw new CorruptFileError({ file: path, tensor: t.name, problem: `data overlaps tensor "${prev.name}"` });
    }
    if (t.offset + t.byteSize > fileSize) {
      throw new TruncatedFileError({
        file: path,
        tensor: t.name,
        problem: `data (bytes ${t.offset}..${t.offset + t.byteSize}) lies past the end of the ${fileSize}-byte file`,
        fix: 'The file is truncated; download it again',
      });
    }
    prev = t;
  }

  const byName = new Map<string, GgufTensorInfo>();
  for (const t of tensors) {
    if (byName.has(t.name)) throw new CorruptFileError({ file: path, tensor: t.name, problem: 'tensor name appears twice' });
    byName.set(t.name, t);
  }
  const info = (name: string): GgufTensorInfo => {
    const t = byName.get(name);
    if (!t) throw new TensorNotFoundError({ file: path, tensor: name, problem: `not in this GGUF file (${byName.size} tensors)` });
    return t;
  };
  const readRaw = async (name: string): Promise<Uint8Array> => {
    const t = info(name);
    return readAt(t.offset, t.byteSize, name);
  };
  return {
    path,
    version,
    metadata,
    alignment,
    dataOffset,
    tensors,
    has: (name) => byName.has(name),
    info,
    readRaw,
    async toFloat32(name) {
      const t = info(name);
      if (!ggmlTypeInfo(t.type)?.codec) {
        throw new UnsupportedFormatError({
          file: path,
          tensor: name,
          problem: `cannot dequantize ggml type ${t.typeName}`,
          fix: 'Supported: F32, F16, BF16, Q8_0, Q4_K, Q6_K; use readRaw() for the raw blocks',
        });
      }
      return dequantize(t.type, await readRaw(name), t.nElements);
    },
  };
}
