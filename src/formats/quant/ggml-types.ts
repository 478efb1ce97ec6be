/**
 * ggml tensor types: ids as written in GGUF files, block sizes (elements per block) and type sizes
 * (bytes per block), as in ggml.h / ggml-common.h.
 *
 * `GGML_TYPES` lists every type whose block layout is known, so sizes and bounds can be checked for
 * any tensor of a file; `codec` says whether this runtime can dequantize it (F32, F16, BF16, Q8_0,
 * Q4_K, Q6_K, MXFP4). The other entries only allow raw block reads and clear "unsupported" errors.
 */

export const GgmlType = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q8_1: 9,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  Q8_K: 15,
  I8: 24,
  I16: 25,
  I32: 26,
  I64: 27,
  F64: 28,
  BF16: 30,
  MXFP4: 39,
} as const;

export type GgmlTypeName = keyof typeof GgmlType;
export type GgmlTypeId = (typeof GgmlType)[GgmlTypeName];

/** Elements per super-block of the K-quants. */
export const QK_K = 256;

export interface GgmlTypeInfo {
  readonly id: GgmlTypeId;
  readonly name: GgmlTypeName;
  /** Elements per block (1 for plain types). */
  readonly blockSize: number;
  /** Bytes per block. */
  readonly typeSize: number;
  /** True when `dequantize` / `quantize` in this package handle the type. */
  readonly codec: boolean;
}

function t(name: GgmlTypeName, blockSize: number, typeSize: number, codec = false): GgmlTypeInfo {
  return { id: GgmlType[name], name, blockSize, typeSize, codec };
}

/** Layout of each known ggml type, keyed by the ggml type id. */
export const GGML_TYPES: Readonly<Record<GgmlTypeId, GgmlTypeInfo>> = {
  0: t('F32', 1, 4, true),
  1: t('F16', 1, 2, true),
  2: t('Q4_0', 32, 18), // f16 d + 16 bytes of nibbles
  3: t('Q4_1', 32, 20), // f16 d, f16 m + 16 bytes
  6: t('Q5_0', 32, 22), // f16 d + 4 bytes qh + 16 bytes
  7: t('Q5_1', 32, 24), // f16 d, f16 m + 4 + 16
  8: t('Q8_0', 32, 34, true), // f16 d + 32 int8
  9: t('Q8_1', 32, 36), // f16 d, f16 s + 32 int8
  10: t('Q2_K', QK_K, 84),
  11: t('Q3_K', QK_K, 110),
  12: t('Q4_K', QK_K, 144, true), // f16 d, f16 dmin, 12 scale bytes, 128 nibble bytes
  13: t('Q5_K', QK_K, 176),
  14: t('Q6_K', QK_K, 210, true), // 128 ql, 64 qh, 16 int8 scales, f16 d
  15: t('Q8_K', QK_K, 292),
  24: t('I8', 1, 1),
  25: t('I16', 1, 2),
  26: t('I32', 1, 4),
  27: t('I64', 1, 8),
  28: t('F64', 1, 8),
  30: t('BF16', 1, 2, true),
  39: t('MXFP4', 32, 17, true), // e8m0 scale + 16 bytes of E2M1 nibbles (element j low, j+16 high)
};

/** Layout for a type id, or undefined if the id is not a known ggml type. */
export function ggmlTypeInfo(id: number): GgmlTypeInfo | undefined {
  return (GGML_TYPES as Record<number, GgmlTypeInfo | undefined>)[id];
}

/** Bytes taken by `nElements` elements of a type; throws if not a whole number of blocks. */
export function ggmlByteSize(info: GgmlTypeInfo, nElements: number): number {
  if (nElements % info.blockSize !== 0) {
    throw new RangeError(
      `${info.name}: ${nElements} elements is not a multiple of the block size ${info.blockSize}`,
    );
  }
  return (nElements / info.blockSize) * info.typeSize;
}
