/**
 * GGUF reader. The header (metadata and tensor infos) is parsed by `@huggingface/gguf`; this module
 * validates tensor types, sizes and bounds against the file and reads tensor data on demand.
 *
 * Shapes: ggml lists dimensions fastest-first (`ne`, ne[0] = row length). `shape` is the same
 * dimensions outermost-first (row-major, as PyTorch / safetensors write them), i.e. `ne` reversed:
 * a Hugging Face weight of shape [out, in] is stored with ne = [in, out] and reported here as
 * shape [out, in].
 */

import { open, stat } from 'node:fs/promises';
import { gguf, GGMLQuantizationType, type MetadataValue } from '@huggingface/gguf';
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

function typeName(id: number): string {
  return ggmlTypeInfo(id)?.name ?? GGMLQuantizationType[id] ?? `unknown type ${id}`;
}

async function parseHeader(path: string, fileSize: number) {
  try {
    return await gguf(path, { allowLocalFile: true });
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

/** Open a GGUF file: parse its header and validate every tensor's type and byte range. */
export async function openGguf(path: string): Promise<GgufFile> {
  const st = await stat(path).catch(() => undefined);
  if (!st?.isFile()) throw new MissingFileError({ file: path, problem: 'does not exist or is not a file' });
  const fileSize = st.size;
  const parsed = await parseHeader(path, fileSize);
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
    if (ne.length > 0 && ne[0]! % info.blockSize !== 0) {
      throw new CorruptFileError({
        file: path,
        tensor: ti.name,
        problem: `row length ne[0] = ${ne[0]} is not a multiple of the ${info.name} block size ${info.blockSize}`,
      });
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
    const out = new Uint8Array(t.byteSize);
    const fh = await open(path, 'r');
    try {
      let done = 0;
      while (done < out.byteLength) {
        const { bytesRead } = await fh.read(out, done, Math.min(1 << 30, out.byteLength - done), t.offset + done);
        if (bytesRead === 0) {
          throw new TruncatedFileError({ file: path, tensor: name, problem: `unexpected end of file at byte ${t.offset + done}` });
        }
        done += bytesRead;
      }
    } finally {
      await fh.close();
    }
    return out;
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
