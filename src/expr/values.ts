/**
 * Runtime values of the expression language: numbers, strings, booleans, lists (shapes), records
 * (attrs, shapes, device.limits, ...) and sets (device.features, with a `has` method).
 */
export type Value = number | string | boolean | readonly Value[] | ReadonlySet<string> | ValueRecord;
export interface ValueRecord {
  readonly [key: string]: Value | undefined;
}

export const isList = (v: unknown): v is readonly unknown[] => Array.isArray(v);
export const isSet = (v: unknown): v is ReadonlySet<unknown> => v instanceof Set;
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Set);

export function typeName(v: unknown): string {
  if (isList(v)) return 'list';
  if (isSet(v)) return 'set';
  if (isRecord(v)) return 'object';
  return typeof v;
}

/** Compact, JSON-like rendering for messages: 4, "swiglu", [4,2880], {a: 1}. */
export function formatValue(v: unknown, depth = 0): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (isList(v)) return `[${v.map((x) => formatValue(x, depth + 1)).join(',')}]`;
  if (isSet(v)) return `set(${v.size})`;
  if (isRecord(v)) {
    if (depth > 0) return '{…}';
    const keys = Object.keys(v);
    const shown = keys.slice(0, 8).map((k) => `${k}: ${formatValue(v[k], depth + 1)}`);
    return `{${shown.join(', ')}${keys.length > 8 ? ', …' : ''}}`;
  }
  return String(v);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (isList(a) && isList(b)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  return false;
}

/** Edit distance, for "did you mean" suggestions. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0]!;
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = d[j]!;
      d[j] = Math.min(d[j]! + 1, d[j - 1]! + 1, prev + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1));
      prev = cur;
    }
  }
  return d[b.length]!;
}

/** ` (did you mean "x"?)` for the closest candidate within a small edit distance, else ''. */
export function suggest(name: string, candidates: Iterable<string>): string {
  let best: string | undefined;
  let bestD = Math.max(1, Math.floor(name.length / 3)) + 1;
  for (const c of candidates) {
    const dd = distance(name, c);
    if (dd < bestD) {
      best = c;
      bestD = dd;
    }
  }
  return best === undefined ? '' : ` (did you mean "${best}"?)`;
}
