/**
 * Token ids where they enter (the CLI's --ids, the library's computeLogits / generateTokens): decimal integers in
 * 0..vocab_size-1, checked before any GPU work so an out-of-range id never reads a row past the embedding table.
 */
import { TokenIdError } from './errors.ts';

const range = (vocabSize: number) => `valid ids are 0..${vocabSize - 1} (vocab_size ${vocabSize})`;

/** Throws TokenIdError unless `ids` is a non-empty list of integers in 0..vocabSize-1. */
export function checkTokenIds(ids: unknown, vocabSize: number, where: string): asserts ids is readonly number[] {
  const list = ids as ArrayLike<unknown> | null | undefined;
  if (list === null || typeof list !== 'object' || typeof list.length !== 'number') {
    throw new TokenIdError(where, String(ids), `expected an array of token ids, got ${typeof ids}`);
  }
  if (list.length === 0) throw new TokenIdError(where, '', `no token ids: give at least one (${range(vocabSize)})`);
  for (let i = 0; i < list.length; i++) {
    const v = list[i];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= vocabSize) {
      const shown = typeof v === 'number' ? String(v) : JSON.stringify(v) ?? String(v);
      throw new TokenIdError(where, shown, `token id ${shown} at position ${i} is not a valid id: ${range(vocabSize)}`);
    }
  }
}

/**
 * Parse comma-separated decimal token ids ("1, 2,3"). Hex, exponents, signs, fractions and empty items are errors
 * naming the item; with `vocabSize`, ids are range-checked too.
 */
export function parseTokenIds(text: string, where = '--ids', vocabSize?: number): number[] {
  const expect = vocabSize === undefined ? 'decimal integers from 0 to vocab_size-1' : `decimal integers, ${range(vocabSize)}`;
  const items = text.split(',').map((x) => x.trim());
  const ids: number[] = [];
  for (const item of items) {
    if (!/^[0-9]+$/.test(item)) {
      throw new TokenIdError(where, item, `${JSON.stringify(item)}${items.length > 1 ? ` (in "${text}")` : ''} is not a token id: write ids as ${expect}, separated by commas`);
    }
    const n = Number(item);
    if (vocabSize !== undefined ? n >= vocabSize : !Number.isSafeInteger(n)) {
      throw new TokenIdError(where, item, `token id ${item} is out of range: ${vocabSize === undefined ? 'too large' : range(vocabSize)}`);
    }
    ids.push(n);
  }
  return ids;
}
