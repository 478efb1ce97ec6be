/**
 * GGUF metadata value type ids, with @huggingface/gguf's enum type: a value import of that package would bring its
 * Node file reader into a browser bundle, so the ids are written here (they are fixed by the GGUF format).
 */
import type { GGUFValueType as LibGGUFValueType } from '@huggingface/gguf';

export type GGUFValueType = LibGGUFValueType;
export const GGUFValueType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as unknown as typeof LibGGUFValueType;

/** Whether `n` is a GGUF value type id. */
export function isGgufValueType(n: number): boolean {
  return Number.isInteger(n) && n >= 0 && n <= 12;
}
