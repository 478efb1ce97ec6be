import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evalExpr, ExprError, KEYWORDS, parseExpr, printExpr, stripPositions, type Node } from '../src/expr/index.ts';

// ---- arithmetic matches JS -------------------------------------------------------------------
type Arith = { kind: 'int'; v: number } | { kind: 'neg'; e: Arith } | { kind: 'bin'; op: '+' | '-' | '*' | '/' | '%'; l: Arith; r: Arith };
const arith: fc.Arbitrary<Arith> = fc.letrec<{ e: Arith }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.integer({ min: 0, max: 1000 }).map((v) => ({ kind: 'int' as const, v })),
    tie('e').map((e) => ({ kind: 'neg' as const, e })),
    fc.record({ kind: fc.constant('bin' as const), op: fc.constantFrom('+', '-', '*', '/', '%') as fc.Arbitrary<'+' | '-' | '*' | '/' | '%'>, l: tie('e'), r: tie('e') }),
  ),
})).e;

const PREC = { '+': 1, '-': 1, '*': 2, '/': 2, '%': 2 } as const;
const precOf = (a: Arith) => (a.kind === 'bin' ? PREC[a.op] : 3);
/** Our own printer (independent of printExpr): parentheses where needed, plus random redundant ones. */
function show(a: Arith, extra: () => boolean): string {
  const wrap = (s: string, need: boolean) => (need || extra() ? `(${s})` : s);
  if (a.kind === 'int') return String(a.v);
  if (a.kind === 'neg') return `-${wrap(show(a.e, extra), a.e.kind !== 'int')}`;
  return `${wrap(show(a.l, extra), precOf(a.l) < PREC[a.op])} ${a.op} ${wrap(show(a.r, extra), precOf(a.r) <= PREC[a.op])}`;
}
/** Expected value with JS semantics; undefined on division/modulo by zero. */
function value(a: Arith): number | undefined {
  if (a.kind === 'int') return a.v;
  if (a.kind === 'neg') {
    const v = value(a.e);
    return v === undefined ? undefined : -v;
  }
  const l = value(a.l);
  const r = value(a.r);
  if (l === undefined || r === undefined) return undefined;
  if ((a.op === '/' || a.op === '%') && r === 0) return undefined;
  return a.op === '+' ? l + r : a.op === '-' ? l - r : a.op === '*' ? l * r : a.op === '/' ? l / r : l % r;
}

describe('property: arithmetic matches JS', () => {
  it('random integer expressions evaluate to the JS value (or divide-by-zero errors)', () => {
    fc.assert(
      fc.property(arith, fc.infiniteStream(fc.boolean()), (a, bools) => {
        const it = bools[Symbol.iterator]();
        const src = show(a, () => it.next().value as boolean);
        const expected = value(a);
        if (expected === undefined) {
          expect(() => evalExpr(src)).toThrow(ExprError);
          return;
        }
        expect(evalExpr(src)).toBe(expected);
        // The same text is valid JS with the same precedence: cross-check.
        expect(evalExpr(src)).toBe(new Function(`return ${src};`)() as number);
      }),
      { numRuns: 500 },
    );
  });
});

// ---- print → parse round trip --------------------------------------------------------------
const ident = fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,6}$/).filter((s) => !KEYWORDS.has(s));
const num = fc.oneof(fc.nat(), fc.double({ min: 0, max: 1e300, noNaN: true, noDefaultInfinity: true })).map((v) => (v === 0 ? 0 : v));
const at = { pos: 0, end: 0 };
const ast: fc.Arbitrary<Node> = fc.letrec<{ n: Node }>((tie) => ({
  n: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    num.map((value): Node => ({ type: 'num', value, ...at })),
    fc.string({ maxLength: 6 }).map((value): Node => ({ type: 'str', value, ...at })),
    fc.boolean().map((value): Node => ({ type: 'bool', value, ...at })),
    ident.map((name): Node => ({ type: 'name', name, ...at })),
    fc.array(tie('n'), { maxLength: 3 }).map((items): Node => ({ type: 'list', items, ...at })),
    fc.tuple(tie('n'), ident).map(([object, property]): Node => ({ type: 'member', object, property, ...at })),
    fc.tuple(tie('n'), tie('n')).map(([object, index]): Node => ({ type: 'index', object, index, ...at })),
    fc.tuple(fc.oneof(ident.map((name): Node => ({ type: 'name', name, ...at })), fc.tuple(tie('n'), ident).map(([object, property]): Node => ({ type: 'member', object, property, ...at }))), fc.array(tie('n'), { maxLength: 3 }))
      .map(([callee, args]): Node => ({ type: 'call', callee, args, ...at })),
    fc.tuple(fc.constantFrom('-', 'not') as fc.Arbitrary<'-' | 'not'>, tie('n')).map(([op, operand]): Node => ({ type: 'unary', op, operand, ...at })),
    fc.tuple(fc.constantFrom('or', 'and', '==', '!=', '<', '<=', '>', '>=', '+', '-', '*', '/', '%') as fc.Arbitrary<Extract<Node, { type: 'binary' }>['op']>, tie('n'), tie('n'))
      .map(([op, left, right]): Node => ({ type: 'binary', op, left, right, ...at })),
    fc.tuple(tie('n'), tie('n'), tie('n')).map(([then, test, other]): Node => ({ type: 'cond', then, test, else: other, ...at })),
  ),
})).n;

describe('property: printing and re-parsing gives the same AST', () => {
  it('parse(print(ast)) == ast', () => {
    fc.assert(
      fc.property(ast, (n) => {
        const text = printExpr(n);
        expect(stripPositions(parseExpr(text))).toEqual(stripPositions(n));
        expect(printExpr(parseExpr(text))).toBe(text); // printing is a fixed point
      }),
      { numRuns: 1000 },
    );
  });
});

// ---- precedence and associativity ----------------------------------------------------------
describe('property: precedence and associativity', () => {
  const int = fc.integer({ min: -50, max: 50 });
  const nz = int.filter((x) => x !== 0);
  it('arithmetic: * / % bind tighter than + -, all left-associative, unary minus tightest', () => {
    fc.assert(
      fc.property(int, int, nz, (a, b, c) => {
        const v = { a, b, c };
        expect(evalExpr('a - b - c', v)).toBe(a - b - c);
        expect(evalExpr('a - b + c', v)).toBe(a - b + c);
        expect(evalExpr('a + b * c', v)).toBe(a + b * c);
        expect(evalExpr('a * b % c', v)).toBe((a * b) % c);
        expect(evalExpr('a % c * b', v)).toBe((a % c) * b);
        expect(evalExpr('a / c / c', v)).toBe(a / c / c);
        expect(evalExpr('-a * b', v)).toBe(-a * b);
        expect(evalExpr('a - -b', v)).toBe(a + b);
        expect(evalExpr('a + b < c * 2', v)).toBe(a + b < c * 2);
      }),
    );
  });
  it('logic: not > and > or; comparisons inside not; conditional loosest and right-associative', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.boolean(), fc.boolean(), int, int, int, (p, q, r, a, b, c) => {
        const v = { p, q, r, a, b, c };
        expect(evalExpr('p or q and r', v)).toBe(p || (q && r));
        expect(evalExpr('p and q or r', v)).toBe((p && q) || r);
        expect(evalExpr('not p and q', v)).toBe(!p && q);
        expect(evalExpr('not p or q', v)).toBe(!p || q);
        expect(evalExpr('not a < b', v)).toBe(!(a < b));
        expect(evalExpr('not p == q', v)).toBe(!(p === q));
        expect(evalExpr('a if p else b if q else c', v)).toBe(p ? a : q ? b : c);
        expect(evalExpr('a + 1 if p or q else c', v)).toBe(p || q ? a + 1 : c);
        expect(evalExpr('(a if p else b) + c', v)).toBe((p ? a : b) + c);
      }),
    );
  });
  it('left-associative trees for chains of the same precedence', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('+', '-', '*', '/', '%', 'and', 'or'), { minLength: 2, maxLength: 5 }), (ops) => {
        const same = ops.every((o) => ['+', '-'].includes(o)) || ops.every((o) => ['*', '/', '%'].includes(o)) || ops.every((o) => o === 'and') || ops.every((o) => o === 'or');
        fc.pre(same);
        const src = ops.reduce((s, op, i) => `${s} ${op} x${i + 1}`, 'x0');
        let n = parseExpr(src);
        for (let i = ops.length - 1; i >= 0; i--) {
          expect(n.type).toBe('binary');
          if (n.type !== 'binary') return;
          expect(n.op).toBe(ops[i]);
          expect(n.right).toMatchObject({ type: 'name', name: `x${i + 1}` });
          n = n.left;
        }
        expect(n).toMatchObject({ type: 'name', name: 'x0' });
      }),
    );
  });
});
