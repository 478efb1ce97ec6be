/**
 * Mutators for the fuzz tests (test/fuzz-*.test.ts): byte-level mutations of a real file (flips, overwrites with
 * huge little-endian numbers, truncation, insertion, deletion, duplication) and structural mutations of a parsed
 * JSON value (replace, delete or duplicate a node, with hostile values). Both are driven by fast-check arbitraries,
 * so a failure shrinks to a small list of mutations and is replayable from the printed seed.
 */
import fc from 'fast-check';

/** Interesting integers to write into headers (lengths, counts, offsets, dims). */
export const HUGE: readonly bigint[] = [
  0n, 1n, 2n, 7n, 8n, 31n, 32n, 255n, 256n, 0x7fffn, 0xffffn, 0x7fffffffn, 0x80000000n, 0xffffffffn, 0x100000000n,
  0x100000001n, 2n ** 40n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 62n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n,
];

export interface ByteMutation {
  kind: 'flip' | 'set' | 'u64' | 'u32' | 'truncate' | 'insert' | 'delete' | 'dup';
  at: number;
  value: number;
  len: number;
}

export const byteMutation: fc.Arbitrary<ByteMutation> = fc.record({
  kind: fc.constantFrom<ByteMutation['kind']>('flip', 'set', 'u64', 'u32', 'truncate', 'insert', 'delete', 'dup'),
  at: fc.nat(),
  value: fc.nat(),
  len: fc.integer({ min: 1, max: 64 }),
});

export const byteMutations = fc.array(byteMutation, { minLength: 1, maxLength: 4 });

/**
 * Apply mutations to a copy of `seed`. Positions are taken modulo `focus` (e.g. the header length) so mutations
 * land where the parser looks; with `focus` undefined, anywhere in the file.
 */
export function mutateBytes(seed: Uint8Array, muts: readonly ByteMutation[], focus?: number): Uint8Array {
  let b: Uint8Array = seed.slice();
  for (const m of muts) {
    const span = Math.max(1, Math.min(focus ?? b.length, b.length));
    const at = m.at % span;
    switch (m.kind) {
      case 'flip':
        if (b.length) b[at] = b[at]! ^ (1 << (m.value % 8));
        break;
      case 'set':
        if (b.length) b[at] = m.value & 0xff;
        break;
      case 'u64':
      case 'u32': {
        const n = m.kind === 'u64' ? 8 : 4;
        let v = HUGE[m.value % HUGE.length]!;
        for (let i = 0; i < n && at + i < b.length; i++, v >>= 8n) b[at + i] = Number(v & 0xffn);
        break;
      }
      case 'truncate':
        b = b.slice(0, at);
        break;
      case 'insert': {
        const ins = new Uint8Array(m.len).map((_, i) => (m.value * (i + 7)) & 0xff);
        b = concat(b.subarray(0, at), ins, b.subarray(at));
        break;
      }
      case 'delete':
        b = concat(b.subarray(0, at), b.subarray(at + m.len));
        break;
      case 'dup':
        b = concat(b.subarray(0, at + m.len), b.subarray(at, at + m.len), b.subarray(at + m.len));
        break;
    }
  }
  return b;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Values that break naive readers: huge and fractional numbers, wrong types, deep nesting, prototype keys. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    0, -1, 1.5, 1e9, 2 ** 32, 2 ** 40, 2 ** 53, 1e308, -1e308, Number.MAX_SAFE_INTEGER, null, true, false, '', 'x', '__proto__',
    [], {}, [[[[[]]]]], { __proto__: { polluted: 1 } }, JSON.parse('{"__proto__": 1}'), '${', '}}', '{{', '\u0000', 'a'.repeat(1000),
  ),
  fc.integer(),
  fc.double(),
  fc.string(),
  fc.jsonValue({ maxDepth: 3 }),
);

export interface JsonMutation {
  kind: 'replace' | 'delete' | 'dup' | 'swap';
  node: number;
  other: number;
  value: unknown;
}

export const jsonMutation: fc.Arbitrary<JsonMutation> = fc.record({
  kind: fc.constantFrom<JsonMutation['kind']>('replace', 'replace', 'delete', 'dup', 'swap'),
  node: fc.nat(),
  other: fc.nat(),
  value: hostileValue,
});

export const jsonMutations = fc.array(jsonMutation, { minLength: 1, maxLength: 3 });

type Slot = { parent: Record<string, unknown> | unknown[]; key: string | number };

function slots(root: unknown): Slot[] {
  const out: Slot[] = [];
  const stack: unknown[] = [root];
  while (stack.length) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      v.forEach((x, i) => {
        out.push({ parent: v, key: i });
        stack.push(x);
      });
    } else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        out.push({ parent: v as Record<string, unknown>, key: k });
        stack.push(x);
      }
    }
  }
  return out;
}

/** Apply mutations to a deep copy of `seed` (a JSON value). */
export function mutateJson<T>(seed: T, muts: readonly JsonMutation[]): T {
  const root = { v: structuredClone(seed) as unknown };
  for (const m of muts) {
    const all = [{ parent: root as unknown as Record<string, unknown>, key: 'v' }, ...slots(root.v)];
    const s = all[m.node % all.length]!;
    const get = (x: Slot) => (x.parent as Record<string | number, unknown>)[x.key];
    const set = (x: Slot, v: unknown) => ((x.parent as Record<string | number, unknown>)[x.key] = v);
    switch (m.kind) {
      case 'replace':
        set(s, structuredClone(m.value));
        break;
      case 'delete':
        if (s.parent === (root as unknown)) set(s, undefined);
        else if (Array.isArray(s.parent)) s.parent.splice(s.key as number, 1);
        else delete (s.parent as Record<string, unknown>)[s.key as string];
        break;
      case 'dup':
        if (Array.isArray(s.parent)) s.parent.push(structuredClone(get(s)));
        else set(s, [get(s), get(s)]);
        break;
      case 'swap': {
        const o = all[m.other % all.length]!;
        const a = get(s);
        const b = get(o);
        set(s, structuredClone(b));
        set(o, structuredClone(a));
        break;
      }
    }
  }
  return root.v as T;
}

/**
 * Run `fn` and return its error; an error that is not an instance of one of `named` (a TypeError, a RangeError, a
 * stack overflow...) fails the property with the input that caused it.
 */
export function expectOnly(named: readonly (abstract new (...a: never[]) => Error)[], fn: () => unknown): void {
  try {
    fn();
  } catch (e) {
    if (named.some((C) => e instanceof C)) return;
    throw new Error(`unexpected ${(e as Error)?.name ?? typeof e}: ${(e as Error)?.message ?? String(e)}`, { cause: e });
  }
}

export async function expectOnlyAsync(named: readonly (abstract new (...a: never[]) => Error)[], fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
  } catch (e) {
    if (named.some((C) => e instanceof C)) return;
    throw new Error(`unexpected ${(e as Error)?.name ?? typeof e}: ${(e as Error)?.message ?? String(e)}`, { cause: e });
  }
}
