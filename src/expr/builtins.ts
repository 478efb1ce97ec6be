import { formatValue, isList, isRecord, isSet, typeName } from './values.ts';

/** Thrown by a builtin; the evaluator turns it into an ExprError at the argument (or call) position. */
export class BuiltinError extends Error {
  constructor(
    message: string,
    readonly argIndex?: number,
  ) {
    super(message);
  }
}

type Builtin = (args: unknown[]) => unknown;

function num(fn: string, args: unknown[], i: number): number {
  const v = args[i];
  if (typeof v !== 'number') throw new BuiltinError(`${fn}() argument ${i + 1} must be a number, got ${typeName(v)} ${formatValue(v)}`, i);
  return v;
}
function arity(fn: string, args: unknown[], n: number): void {
  if (args.length !== n) throw new BuiltinError(`${fn}() takes ${n} argument${n === 1 ? '' : 's'}, got ${args.length}`);
}
function shape(fn: string, args: unknown[], i: number): readonly number[] {
  const v = args[i];
  if (!isList(v) || !v.every((x) => typeof x === 'number')) {
    throw new BuiltinError(`${fn}() argument ${i + 1} must be a shape (list of numbers), got ${typeName(v)} ${formatValue(v)}`, i);
  }
  return v as readonly number[];
}
function extremum(fn: string, pick: (a: number, b: number) => number): Builtin {
  return (args) => {
    const xs = args.length === 1 && isList(args[0]) ? (args[0] as unknown[]) : args;
    if (xs.length === 0) throw new BuiltinError(`${fn}() needs at least one number`);
    return xs.map((_, i) => num(fn, xs, i)).reduce((a, b) => pick(a, b));
  };
}

export const BUILTINS: Readonly<Record<string, Builtin>> = {
  min: extremum('min', Math.min),
  max: extremum('max', Math.max),
  floor: (a) => (arity('floor', a, 1), Math.floor(num('floor', a, 0))),
  ceil: (a) => (arity('ceil', a, 1), Math.ceil(num('ceil', a, 0))),
  /** The square root of a non-negative number (e.g. an attention scale 1 / sqrt(headDim)). */
  sqrt: (a) => {
    arity('sqrt', a, 1);
    const x = num('sqrt', a, 0);
    if (x < 0) throw new BuiltinError(`sqrt() of negative ${x}`, 0);
    return Math.sqrt(x);
  },
  /** ceil(a / b) */
  ceilDiv: (a) => {
    arity('ceilDiv', a, 2);
    const x = num('ceilDiv', a, 0);
    const y = num('ceilDiv', a, 1);
    if (y === 0) throw new BuiltinError('ceilDiv() by zero', 1);
    return Math.ceil(x / y);
  },
  /** The smallest power of two >= n (1 for n <= 1). */
  pow2ceil: (a) => {
    arity('pow2ceil', a, 1);
    const n = num('pow2ceil', a, 0);
    let p = 1;
    while (p < n) p *= 2;
    return p;
  },
  /** dim(shape, i): the size of axis i (negative i counts from the end). */
  dim: (a) => {
    arity('dim', a, 2);
    const s = shape('dim', a, 0);
    const i = num('dim', a, 1);
    const j = i < 0 ? s.length + i : i;
    if (!Number.isInteger(i) || j < 0 || j >= s.length) {
      throw new BuiltinError(`dim(): axis ${i} is out of range for shape ${formatValue(s)} (rank ${s.length})`, 1);
    }
    return s[j]!;
  },
  /** numel(shape): the product of the dimensions (1 for a scalar shape []). */
  numel: (a) => (arity('numel', a, 1), shape('numel', a, 0).reduce((p, d) => p * d, 1)),
  /** has(obj, "key"): whether a record has the field, a set the member, or a list the item. */
  has: (a) => {
    arity('has', a, 2);
    const [o, k] = a;
    if (isSet(o)) return o.has(k);
    if (isList(o)) return o.includes(k);
    if (typeof k !== 'string') throw new BuiltinError(`has() key must be a string, got ${typeName(k)}`, 1);
    if (isRecord(o)) return Object.prototype.hasOwnProperty.call(o, k) && o[k] !== undefined;
    throw new BuiltinError(`has() argument 1 must be an object, set or list, got ${typeName(o)}`, 0);
  },
};

/** Methods callable as `value.method(...)`. */
export function callMethod(obj: unknown, method: string, args: unknown[]): unknown {
  if (isSet(obj) && method === 'has') {
    arity('has', args, 1);
    return obj.has(args[0]);
  }
  throw new BuiltinError(`${typeName(obj)} has no method "${method}"${isSet(obj) ? ' (sets have .has(x))' : ''}`);
}
