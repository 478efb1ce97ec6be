/**
 * Quantized random weights, memoized within a test file (vitest runs each file in a worker of its own): cases that draw
 * the same weights (the same seed and shape, different tunables) quantize them once. An LM head's 16.8M Q4_K weights
 * take several seconds to quantize on the CPU. The memo is keyed on the values themselves (format, length and SHA-1 of
 * their bytes), so a hit is exactly the input the quantizer would be given; each caller gets a copy of the bytes of its
 * own (a case may edit its weights). The quantizers and their dequantizers are src/formats' own, unchanged.
 */
import { createHash } from 'node:crypto';
import { quantizeQ4_K, quantizeQ6_K, quantizeQ8_0 } from '../../src/formats/index.ts';

const QUANTIZE = { q4_k: quantizeQ4_K, q6_k: quantizeQ6_K, q8_0: quantizeQ8_0 } as const;
export type QuantFormat = keyof typeof QUANTIZE;

const memo = new Map<string, Uint8Array>();

/** `quantize<fmt>(values)`, computed once per distinct `values` in this worker; a fresh copy of the bytes. */
export function quantizeMemo(fmt: QuantFormat, values: Float32Array): Uint8Array {
  const digest = createHash('sha1').update(new Uint8Array(values.buffer, values.byteOffset, values.byteLength)).digest('hex');
  const key = `${fmt}:${values.length}:${digest}`;
  let bytes = memo.get(key);
  if (!bytes) {
    bytes = QUANTIZE[fmt](values);
    memo.set(key, bytes);
  }
  return bytes.slice();
}
