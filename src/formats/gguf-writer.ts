/**
 * GGUF v3 writer (little-endian): header, metadata key/values, tensor infos, padding to the
 * alignment, then each tensor's data at an aligned offset. Used by tests and our own tooling.
 */

import { getHost } from '../host.ts';
import type { MetadataValue } from '@huggingface/gguf';
import { GGUFValueType } from './gguf-value-type.ts';
import { GGUF_DEFAULT_ALIGNMENT } from './gguf.ts';
import { ggmlByteSize, ggmlTypeInfo } from './quant/ggml-types.ts';

/** A metadata value with an explicit GGUF type (arrays give the element type as `subType`). */
export interface GgufTypedValue {
  type: GGUFValueType;
  value: MetadataValue;
  subType?: GGUFValueType;
}

/**
 * A metadata value: explicit, or inferred (string -> STRING, boolean -> BOOL, integer -> UINT32 /
 * INT32, other number -> FLOAT32, bigint -> UINT64 / INT64, arrays by the same rules over all
 * elements). Use the `gv` helpers where the inferred type is not the one the key requires.
 */
export type GgufMetadataInput = GgufTypedValue | MetadataValue;

/** Helpers to give a metadata value an explicit GGUF type. */
export const gv = {
  u8: (value: number): GgufTypedValue => ({ type: GGUFValueType.UINT8, value }),
  i8: (value: number): GgufTypedValue => ({ type: GGUFValueType.INT8, value }),
  u32: (value: number): GgufTypedValue => ({ type: GGUFValueType.UINT32, value }),
  i32: (value: number): GgufTypedValue => ({ type: GGUFValueType.INT32, value }),
  u64: (value: bigint): GgufTypedValue => ({ type: GGUFValueType.UINT64, value }),
  f32: (value: number): GgufTypedValue => ({ type: GGUFValueType.FLOAT32, value }),
  f64: (value: number): GgufTypedValue => ({ type: GGUFValueType.FLOAT64, value }),
  bool: (value: boolean): GgufTypedValue => ({ type: GGUFValueType.BOOL, value }),
  str: (value: string): GgufTypedValue => ({ type: GGUFValueType.STRING, value }),
  arr: (subType: GGUFValueType, value: MetadataValue[]): GgufTypedValue => ({ type: GGUFValueType.ARRAY, subType, value }),
};

/** A tensor to write: `shape` outermost-first (stored as ne = shape reversed); raw bytes of `type`. */
export interface GgufTensorToWrite {
  name: string;
  /** ggml type id. */
  type: number;
  shape: number[];
  data: Uint8Array;
}

function isTyped(v: GgufMetadataInput): v is GgufTypedValue {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && 'type' in v && 'value' in v;
}

function inferScalar(v: MetadataValue, key: string): GGUFValueType {
  if (typeof v === 'string') return GGUFValueType.STRING;
  if (typeof v === 'boolean') return GGUFValueType.BOOL;
  if (typeof v === 'bigint') return v < 0n ? GGUFValueType.INT64 : GGUFValueType.UINT64;
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) return GGUFValueType.FLOAT32;
    if (v >= 0 && v <= 0xffffffff) return GGUFValueType.UINT32;
    if (v < 0 && v >= -0x80000000) return GGUFValueType.INT32;
    throw new RangeError(`metadata "${key}": integer ${v} does not fit 32 bits; pass it as gv.u64(BigInt(...))`);
  }
  throw new RangeError(`metadata "${key}": cannot infer a GGUF type for a nested array; use gv.arr`);
}

function inferArray(values: MetadataValue[], key: string): GGUFValueType {
  const types = new Set(values.map((v) => inferScalar(v, key)));
  if (types.size <= 1) return types.values().next().value ?? GGUFValueType.UINT32;
  if ([...types].every((t) => t === GGUFValueType.UINT32 || t === GGUFValueType.INT32 || t === GGUFValueType.FLOAT32)) {
    return types.has(GGUFValueType.FLOAT32) ? GGUFValueType.FLOAT32 : GGUFValueType.INT32;
  }
  throw new RangeError(`metadata "${key}": array mixes element types; use gv.arr`);
}

export function toTyped(key: string, v: GgufMetadataInput): GgufTypedValue {
  if (isTyped(v)) return v;
  if (Array.isArray(v)) return { type: GGUFValueType.ARRAY, subType: inferArray(v, key), value: v };
  return { type: inferScalar(v, key), value: v };
}

class ByteWriter {
  private buf = new Uint8Array(1 << 16);
  private view = new DataView(this.buf.buffer);
  length = 0;

  private reserve(n: number): void {
    if (this.length + n <= this.buf.byteLength) return;
    let size = this.buf.byteLength * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  u8(v: number) { this.reserve(1); this.view.setUint8(this.length, v); this.length += 1; }
  i8(v: number) { this.reserve(1); this.view.setInt8(this.length, v); this.length += 1; }
  u16(v: number) { this.reserve(2); this.view.setUint16(this.length, v, true); this.length += 2; }
  i16(v: number) { this.reserve(2); this.view.setInt16(this.length, v, true); this.length += 2; }
  u32(v: number) { this.reserve(4); this.view.setUint32(this.length, v, true); this.length += 4; }
  i32(v: number) { this.reserve(4); this.view.setInt32(this.length, v, true); this.length += 4; }
  f32(v: number) { this.reserve(4); this.view.setFloat32(this.length, v, true); this.length += 4; }
  f64(v: number) { this.reserve(8); this.view.setFloat64(this.length, v, true); this.length += 8; }
  u64(v: bigint | number) { this.reserve(8); this.view.setBigUint64(this.length, BigInt(v), true); this.length += 8; }
  i64(v: bigint | number) { this.reserve(8); this.view.setBigInt64(this.length, BigInt(v), true); this.length += 8; }
  bytes(b: Uint8Array) { this.reserve(b.byteLength); this.buf.set(b, this.length); this.length += b.byteLength; }
  str(s: string) { const b = new TextEncoder().encode(s); this.u64(b.byteLength); this.bytes(b); }
  pad(alignment: number) { const n = (alignment - (this.length % alignment)) % alignment; this.reserve(n); this.buf.fill(0, this.length, this.length + n); this.length += n; }
  result(): Uint8Array { return this.buf.slice(0, this.length); }
}

function writeValue(w: ByteWriter, type: GGUFValueType, value: MetadataValue, key: string, subType?: GGUFValueType): void {
  const num = (): number => {
    if (typeof value !== 'number') throw new RangeError(`metadata "${key}": expected a number, got ${typeof value}`);
    return value;
  };
  switch (type) {
    case GGUFValueType.UINT8: return w.u8(num());
    case GGUFValueType.INT8: return w.i8(num());
    case GGUFValueType.UINT16: return w.u16(num());
    case GGUFValueType.INT16: return w.i16(num());
    case GGUFValueType.UINT32: return w.u32(num());
    case GGUFValueType.INT32: return w.i32(num());
    case GGUFValueType.FLOAT32: return w.f32(num());
    case GGUFValueType.FLOAT64: return w.f64(num());
    case GGUFValueType.UINT64: return w.u64(value as bigint | number);
    case GGUFValueType.INT64: return w.i64(value as bigint | number);
    case GGUFValueType.BOOL: return w.u8(value ? 1 : 0);
    case GGUFValueType.STRING:
      if (typeof value !== 'string') throw new RangeError(`metadata "${key}": expected a string`);
      return w.str(value);
    case GGUFValueType.ARRAY: {
      if (!Array.isArray(value) || subType === undefined) {
        throw new RangeError(`metadata "${key}": an ARRAY value needs an array and a subType`);
      }
      w.u32(subType);
      w.u64(value.length);
      for (const v of value) writeValue(w, subType, v, key);
      return;
    }
    default:
      throw new RangeError(`metadata "${key}": unknown GGUF value type ${String(type)}`);
  }
}

/** Serialize a GGUF v3 file. `general.alignment` (UINT32) in the metadata sets the alignment. */
export function serializeGguf(
  metadata: Readonly<Record<string, GgufMetadataInput>>,
  tensors: readonly GgufTensorToWrite[],
): Uint8Array {
  const kvs = Object.entries(metadata).map(([k, v]) => [k, toTyped(k, v)] as const);
  const alignEntry = kvs.find(([k]) => k === 'general.alignment')?.[1];
  const alignment = alignEntry ? Number(alignEntry.value) : GGUF_DEFAULT_ALIGNMENT;
  if (!Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    throw new RangeError(`general.alignment must be a power of two, got ${alignment}`);
  }
  const w = new ByteWriter();
  w.bytes(new TextEncoder().encode('GGUF'));
  w.u32(3);
  w.u64(tensors.length);
  w.u64(kvs.length);
  for (const [k, v] of kvs) {
    w.str(k);
    w.u32(v.type);
    writeValue(w, v.type, v.value, k, v.subType);
  }
  let offset = 0;
  for (const t of tensors) {
    const info = ggmlTypeInfo(t.type);
    if (!info) throw new RangeError(`tensor "${t.name}": unknown ggml type id ${t.type}`);
    const n = t.shape.reduce((a, b) => a * b, 1);
    const inner = t.shape.length ? t.shape[t.shape.length - 1]! : 1;
    if (inner % info.blockSize !== 0) {
      throw new RangeError(`tensor "${t.name}": innermost dimension ${inner} is not a multiple of the ${info.name} block size ${info.blockSize}`);
    }
    const size = ggmlByteSize(info, n);
    if (t.data.byteLength !== size) {
      throw new RangeError(`tensor "${t.name}": ${t.data.byteLength} bytes given, ${info.name} ${JSON.stringify(t.shape)} needs ${size}`);
    }
    w.str(t.name);
    w.u32(t.shape.length);
    for (const d of [...t.shape].reverse()) w.u64(d);
    w.u32(t.type);
    w.u64(offset);
    offset += Math.ceil(size / alignment) * alignment;
  }
  w.pad(alignment);
  for (const t of tensors) {
    w.bytes(t.data);
    w.pad(alignment);
  }
  return w.result();
}

/** Write a GGUF v3 file (Node: through the host's writeFile; elsewhere use serializeGguf). */
export async function writeGguf(
  path: string,
  metadata: Readonly<Record<string, GgufMetadataInput>>,
  tensors: readonly GgufTensorToWrite[],
): Promise<void> {
  await (await getHost(`writeGguf(${path})`)).writeFile(path, serializeGguf(metadata, tensors));
}
