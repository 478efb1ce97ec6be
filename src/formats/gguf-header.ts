/**
 * The GGUF header parser: a port of @huggingface/gguf's `gguf()` (0.4.6, MIT) that reads through a ModelFile
 * (src/formats/files.ts) instead of a URL or a local path, so a browser bundle carries no file-system reader. Same
 * result shape (`metadata` with version / tensor_count / kv_count, `tensorInfos`, `tensorDataOffset`,
 * `tensorInfoByteRange`), the same limits and the same errors; test/formats-gguf.test.ts compares the two.
 */
import type { MetadataValue } from '@huggingface/gguf';
import { GGUFValueType, isGgufValueType } from './gguf-value-type.ts';
import type { ModelFile } from './files.ts';

const GGUF_DEFAULT_ALIGNMENT = 32;
const MAX_METADATA_ARRAY_LENGTH = 1e6;
const MAX_KV_COUNT = 1e5;
const MAX_TENSOR_COUNT = 1e7;
const MAX_STRING_LENGTH = 1e7;
const MAX_TENSOR_NDIMS = 8;
const MAX_TENSOR_DIM = 2 ** 32;
const MAX_ARRAY_RECURSION_DEPTH = 4;
const MAX_CHUNK_FETCHES_PER_VALUE = 30;
const CHUNK_SIZE = 2 * 10 ** 6;
const DATA_LEEWAY = 5 * 10 ** 5;
const GGML_PAD = (x: number, n: number) => (x + n - 1) & ~(n - 1);
const MAGIC = [71, 71, 85, 70];

export interface GgufTensorInfoRaw {
  name: string;
  n_dims: number;
  shape: bigint[];
  dtype: number;
  offset: bigint;
}

export interface ParsedGgufHeader {
  metadata: Record<string, MetadataValue>;
  tensorInfos: GgufTensorInfoRaw[];
  tensorDataOffset: bigint;
  littleEndian: boolean;
  tensorInfoByteRange: [number, number];
}

const isValueType = isGgufValueType;

/** The file's bytes read chunk by chunk (zero-filled past its end, as the original's local-file reader does). */
class ChunkView {
  private chunk = 0;
  view = new DataView(new ArrayBuffer(0));
  constructor(private readonly file: ModelFile) {}
  async fetchChunk(): Promise<void> {
    const next = new Uint8Array((this.chunk + 1) * CHUNK_SIZE);
    next.set(new Uint8Array(this.view.buffer));
    const start = this.chunk * CHUNK_SIZE;
    if (start < this.file.size) next.set(await this.file.read(start, Math.min(CHUNK_SIZE, this.file.size - start)), start);
    this.view = new DataView(next.buffer);
    this.chunk += 1;
  }
  async fetchChunkIfNeeded(offset: number): Promise<void> {
    if (this.view.byteLength - offset < DATA_LEEWAY) await this.fetchChunk();
  }
}

function readSize(view: DataView, at: number, version: number, le: boolean): { value: bigint; length: number } {
  return version === 1 ? { value: BigInt(view.getUint32(at, le)), length: 4 } : { value: view.getBigUint64(at, le), length: 8 };
}

function readString(view: DataView, at: number, version: number, le: boolean): { value: string; length: number } {
  const n = readSize(view, at, version, le);
  if (n.value > MAX_STRING_LENGTH) throw new Error(`String length ${n.value} exceeds maximum allowed (${MAX_STRING_LENGTH})`);
  const start = at + n.length;
  const end = start + Number(n.value);
  if (end > view.byteLength) throw new RangeError('Offset is outside the bounds of the DataView');
  return { value: new TextDecoder().decode(new Uint8Array(view.buffer, start, Number(n.value))), length: n.length + Number(n.value) };
}

function readValue(view: DataView, type: number, at: number, version: number, le: boolean, depth = 0): { value: MetadataValue; length: number } {
  switch (type) {
    case GGUFValueType.UINT8:
      return { value: view.getUint8(at), length: 1 };
    case GGUFValueType.INT8:
      return { value: view.getInt8(at), length: 1 };
    case GGUFValueType.UINT16:
      return { value: view.getUint16(at, le), length: 2 };
    case GGUFValueType.INT16:
      return { value: view.getInt16(at, le), length: 2 };
    case GGUFValueType.UINT32:
      return { value: view.getUint32(at, le), length: 4 };
    case GGUFValueType.INT32:
      return { value: view.getInt32(at, le), length: 4 };
    case GGUFValueType.FLOAT32:
      return { value: view.getFloat32(at, le), length: 4 };
    case GGUFValueType.BOOL:
      return { value: view.getUint8(at) !== 0, length: 1 };
    case GGUFValueType.STRING:
      return readString(view, at, version, le);
    case GGUFValueType.ARRAY: {
      if (depth >= MAX_ARRAY_RECURSION_DEPTH) throw new Error(`Nested ARRAY depth ${depth} exceeds maximum allowed (${MAX_ARRAY_RECURSION_DEPTH})`);
      const elemType = view.getUint32(at, le);
      if (!isValueType(elemType)) throw new Error(`Unsupported array element type: ${elemType}`);
      const n = readSize(view, at + 4, version, le);
      if (n.value > MAX_METADATA_ARRAY_LENGTH) throw new Error(`Metadata array length ${n.value} exceeds maximum allowed (${MAX_METADATA_ARRAY_LENGTH})`);
      let length = 4 + n.length;
      const values: MetadataValue[] = [];
      for (let i = 0; i < n.value; i++) {
        const v = readValue(view, elemType, at + length, version, le, depth + 1);
        values.push(v.value);
        length += v.length;
      }
      return { value: values as MetadataValue, length };
    }
    case GGUFValueType.UINT64:
      return { value: view.getBigUint64(at, le), length: 8 };
    case GGUFValueType.INT64:
      return { value: view.getBigInt64(at, le), length: 8 };
    case GGUFValueType.FLOAT64:
      return { value: view.getFloat64(at, le), length: 8 };
    default:
      throw new Error(`Unsupported metadata type: ${type}`);
  }
}

/** Parses the header (metadata and tensor infos) of a GGUF file. */
export async function parseGgufHeader(file: ModelFile): Promise<ParsedGgufHeader> {
  const r = new ChunkView(file);
  await r.fetchChunk();
  if (!MAGIC.every((b, i) => r.view.getUint8(i) === b)) throw new Error('not a valid gguf file: not starting with GGUF magic number');
  const v0 = r.view.getUint32(4, true);
  const [le, version] = v0 & 65535 ? [true, v0] : [false, r.view.getUint32(4, false)];
  if (version !== 1 && version !== 2 && version !== 3) throw new Error(`not a valid gguf file: unsupported version "${version}"`);
  let offset = 8;
  const tensorCount = readSize(r.view, offset, version, le);
  if (tensorCount.value > MAX_TENSOR_COUNT) throw new Error(`Tensor count ${tensorCount.value} exceeds maximum allowed (${MAX_TENSOR_COUNT})`);
  offset += tensorCount.length;
  const numKv = readSize(r.view, offset, version, le);
  if (numKv.value > MAX_KV_COUNT) throw new Error(`KV metadata count ${numKv.value} exceeds maximum allowed (${MAX_KV_COUNT})`);
  offset += numKv.length;
  const metadata: Record<string, MetadataValue> = { version, tensor_count: tensorCount.value, kv_count: numKv.value } as Record<string, MetadataValue>;
  for (let i = 0; i < numKv.value; i++) {
    await r.fetchChunkIfNeeded(offset);
    const key = readString(r.view, offset, version, le);
    offset += key.length;
    const valueType = r.view.getUint32(offset, le);
    offset += 4;
    if (!isValueType(valueType)) throw new Error(`Unsupported metadata type: ${valueType}`);
    let value: { value: MetadataValue; length: number } | undefined;
    let fetches = 0;
    while (!value) {
      try {
        value = readValue(r.view, valueType, offset, version, le);
      } catch (err) {
        if (!(err instanceof RangeError)) throw err;
        if (++fetches > MAX_CHUNK_FETCHES_PER_VALUE) throw new Error(`Exceeded maximum chunk fetches (${MAX_CHUNK_FETCHES_PER_VALUE}) while reading metadata value`);
        await r.fetchChunk();
      }
    }
    offset += value.length;
    metadata[key.value] = value.value;
  }
  const tensorInfoStart = offset;
  const tensorInfos: GgufTensorInfoRaw[] = [];
  for (let i = 0; i < tensorCount.value; i++) {
    await r.fetchChunkIfNeeded(offset);
    const name = readString(r.view, offset, version, le);
    offset += name.length;
    const nDims = r.view.getUint32(offset, le);
    if (nDims > MAX_TENSOR_NDIMS) throw new Error(`Tensor n_dims ${nDims} exceeds maximum allowed (${MAX_TENSOR_NDIMS})`);
    offset += 4;
    const shape: bigint[] = [];
    for (let d = 0; d < nDims; d++) {
      const dim = readSize(r.view, offset, version, le);
      if (dim.value > BigInt(MAX_TENSOR_DIM)) throw new Error(`Tensor "${name.value}" dimension ${d} is ${dim.value}, which exceeds the maximum allowed (${MAX_TENSOR_DIM})`);
      shape.push(dim.value);
      offset += dim.length;
    }
    const dtype = r.view.getUint32(offset, le);
    offset += 4;
    const tensorOffset = r.view.getBigUint64(offset, le);
    offset += 8;
    tensorInfos.push({ name: name.value, n_dims: nDims, shape, dtype, offset: tensorOffset });
  }
  const rawAlignment = metadata['general.alignment'] ?? GGUF_DEFAULT_ALIGNMENT;
  if (typeof rawAlignment === 'bigint' && rawAlignment > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`general.alignment value ${rawAlignment} exceeds safe integer range`);
  const alignment = Number(rawAlignment);
  if (alignment <= 0 || !Number.isInteger(alignment)) throw new Error(`general.alignment must be a positive integer, got ${String(rawAlignment)}`);
  return { metadata, tensorInfos, tensorDataOffset: BigInt(GGML_PAD(offset, alignment)), littleEndian: le, tensorInfoByteRange: [tensorInfoStart, offset] };
}
