/**
 * Minimal protobuf wire-format encoder: just enough to serialise ONNX ModelProto messages for tests and oracles.
 *
 * Wire types used: 0 (varint: int32/int64/enum), 2 (length-delimited: string/bytes/sub-message), 5 (fixed32: float).
 * Repeated scalar fields are written unpacked (one tag per element), which every protobuf parser accepts for both
 * proto2 and proto3 schemas.
 */

const WIRE_VARINT = 0;
const WIRE_LEN = 2;
const WIRE_FIXED32 = 5;

const U64_MASK = (1n << 64n) - 1n;

export class ProtoWriter {
  private buf: Uint8Array;
  private len = 0;

  constructor(initialCapacity = 256) {
    this.buf = new Uint8Array(Math.max(16, initialCapacity));
  }

  private reserve(extra: number): void {
    const need = this.len + extra;
    if (need <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  private byte(b: number): void {
    this.reserve(1);
    this.buf[this.len++] = b;
  }

  /** Raw base-128 varint of an unsigned value; negative int64 values are written as 10-byte two's complement. */
  rawVarint(value: number | bigint): void {
    let v: bigint;
    if (typeof value === 'number') {
      if (!Number.isSafeInteger(value)) throw new Error(`protobuf varint: ${value} is not a safe integer`);
      v = BigInt(value);
    } else {
      v = value;
    }
    if (v < -(1n << 63n) || v > U64_MASK) throw new Error(`protobuf varint: ${v} is out of 64-bit range`);
    v &= U64_MASK;
    while (v >= 0x80n) {
      this.byte(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.byte(Number(v));
  }

  private tag(field: number, wire: number): void {
    if (!Number.isInteger(field) || field < 1 || field > 0x1fffffff) throw new Error(`protobuf: bad field number ${field}`);
    this.rawVarint(field * 8 + wire);
  }

  private rawBytes(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.buf.set(bytes, this.len);
    this.len += bytes.length;
  }

  /** int32 / int64 / uint64 / enum / bool field. */
  varint(field: number, value: number | bigint | boolean): this {
    this.tag(field, WIRE_VARINT);
    this.rawVarint(typeof value === 'boolean' ? (value ? 1 : 0) : value);
    return this;
  }

  /** float (fixed32, little-endian IEEE 754). */
  float(field: number, value: number): this {
    this.tag(field, WIRE_FIXED32);
    this.reserve(4);
    new DataView(this.buf.buffer, this.buf.byteOffset + this.len, 4).setFloat32(0, value, true);
    this.len += 4;
    return this;
  }

  bytes(field: number, value: Uint8Array): this {
    this.tag(field, WIRE_LEN);
    this.rawVarint(value.length);
    this.rawBytes(value);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  /** Embedded message, either already encoded or built by a callback on a fresh writer. */
  message(field: number, body: Uint8Array | ((w: ProtoWriter) => void)): this {
    if (body instanceof Uint8Array) return this.bytes(field, body);
    const sub = new ProtoWriter();
    body(sub);
    return this.bytes(field, sub.finish());
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}
