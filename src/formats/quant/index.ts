/**
 * Block codecs for ggml tensor types, dispatched by ggml type id.
 */

import { bf16BytesToF32, f16BytesToF32, f32BytesToF32, f32ToBf16Bytes, f32ToF16Bytes } from '../f16.ts';
import { GGML_TYPES, GgmlType, ggmlByteSize, ggmlTypeInfo, type GgmlTypeId } from './ggml-types.ts';
import { dequantizeQ4_K, quantizeQ4_K } from './q4_k.ts';
import { dequantizeQ6_K, quantizeQ6_K } from './q6_k.ts';
import { dequantizeQ8_0, quantizeQ8_0 } from './q8_0.ts';
import { dequantizeMXFP4, quantizeMXFP4 } from './mxfp4.ts';

export * from './ggml-types.ts';
export { dequantizeQ8_0, quantizeQ8_0, Q8_0_BLOCK_SIZE, Q8_0_TYPE_SIZE } from './q8_0.ts';
export { dequantizeQ4_K, quantizeQ4_K, scaleMinK4, packScaleMinK4, Q4_K_BLOCK_SIZE, Q4_K_TYPE_SIZE } from './q4_k.ts';
export { dequantizeQ6_K, quantizeQ6_K, Q6_K_BLOCK_SIZE, Q6_K_TYPE_SIZE } from './q6_k.ts';
export * from './mxfp4.ts';

interface Codec {
  dequantize(bytes: Uint8Array, nElements: number): Float32Array;
  quantize(values: Float32Array): Uint8Array;
}

function plain(decode: (b: Uint8Array) => Float32Array, encode: (v: Float32Array) => Uint8Array, size: number): Codec {
  return {
    dequantize(bytes, n) {
      if (bytes.byteLength < n * size) {
        throw new RangeError(`${n} elements need ${n * size} bytes, got ${bytes.byteLength}`);
      }
      return decode(bytes.subarray(0, n * size));
    },
    quantize: encode,
  };
}

const CODECS: Partial<Record<GgmlTypeId, Codec>> = {
  [GgmlType.F32]: plain(f32BytesToF32, (v) => new Uint8Array(v.slice().buffer), 4),
  [GgmlType.F16]: plain(f16BytesToF32, f32ToF16Bytes, 2),
  [GgmlType.BF16]: plain(bf16BytesToF32, f32ToBf16Bytes, 2),
  [GgmlType.Q8_0]: { dequantize: dequantizeQ8_0, quantize: quantizeQ8_0 },
  [GgmlType.Q4_K]: { dequantize: dequantizeQ4_K, quantize: quantizeQ4_K },
  [GgmlType.Q6_K]: { dequantize: dequantizeQ6_K, quantize: quantizeQ6_K },
  [GgmlType.MXFP4]: { dequantize: dequantizeMXFP4, quantize: quantizeMXFP4 },
};

function codecFor(type: number): Codec {
  const codec = (CODECS as Record<number, Codec | undefined>)[type];
  if (!codec) {
    const info = ggmlTypeInfo(type);
    const supported = Object.values(GGML_TYPES)
      .filter((t) => t.codec)
      .map((t) => t.name)
      .join(', ');
    throw new RangeError(
      `ggml type ${info ? info.name : `id ${type}`} has no codec here (supported: ${supported})`,
    );
  }
  return codec;
}

/** Decode `nElements` elements of ggml type `type` from `bytes` into f32. */
export function dequantize(type: number, bytes: Uint8Array, nElements: number): Float32Array {
  return codecFor(type).dequantize(bytes, nElements);
}

/** Encode f32 values as ggml type `type` (length must be a multiple of the block size). */
export function quantize(type: number, values: Float32Array): Uint8Array {
  const info = ggmlTypeInfo(type);
  if (info) ggmlByteSize(info, values.length); // throws on a partial block
  return codecFor(type).quantize(values);
}
