import { describe, expect, it } from 'vitest';
import { compile, evalExpr, explainFalse, ExprError, formatExplanation, parseExpr, printExpr, Scope, stripPositions, tokenize } from '../src/expr/index.ts';

const device = {
  features: new Set(['subgroups', 'shader-f16']),
  limits: { maxBufferSize: 1024, maxComputeWorkgroupsPerDimension: 65535 },
  adapterInfo: { vendor: 'nvidia', subgroupMinSize: 32 },
};
const env = {
  attrs: { k: 4, activation_type: 'swiglu' },
  shapes: { inputT: [4, 2880], fc1T: [32, 5760, 1440] },
  ranks: { inputT: 2 },
  tensorDtypes: { fc1ScalesT: 'float32' },
  tunables: { workgroupSize: 64 },
  repeat: { chunk: 2 },
  device,
  x: 7,
  t: true,
  f: false,
};
const ev = (s: string) => evalExpr(s, env);
function exprError(fn: () => unknown): ExprError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ExprError) return e;
    throw e;
  }
  throw new Error('expected an ExprError');
}

describe('tokenizer', () => {
  it('splits numbers, strings, names, keywords and operators with positions', () => {
    const t = tokenize('a.b >= 1.5e3 and "x\\"y" != -2');
    expect(t.map((x) => [x.kind, x.text, x.pos])).toEqual([
      ['ident', 'a', 0], ['op', '.', 1], ['ident', 'b', 2], ['op', '>=', 4], ['num', '1.5e3', 7], ['kw', 'and', 13],
      ['str', 'x"y', 17], ['op', '!=', 24], ['op', '-', 27], ['num', '2', 28], ['eof', '', 29],
    ]);
  });
  it('rejects bad characters with a hint and the position', () => {
    const e = exprError(() => tokenize("a == 'x'"));
    expect(e.pos).toBe(5);
    expect(e.message).toContain('strings use double quotes');
    expect(exprError(() => tokenize('a && b')).message).toContain('use and / or / not');
    expect(exprError(() => tokenize('a = b')).message).toContain('use == to compare');
    expect(exprError(() => tokenize('"abc')).message).toContain('unterminated string');
    expect(exprError(() => tokenize('12abc')).pos).toBe(0);
  });
});

describe('literals and operators', () => {
  it('numbers, strings, booleans, lists', () => {
    expect(ev('42')).toBe(42);
    expect(ev('2.5e1')).toBe(25);
    expect(ev('"swiglu"')).toBe('swiglu');
    expect(ev('"a\\nb"')).toBe('a\nb');
    expect(ev('true')).toBe(true);
    expect(ev('false')).toBe(false);
    expect(ev('[x * 2, 3]')).toEqual([14, 3]);
    expect(ev('[]')).toEqual([]);
  });
  it('arithmetic: / is true division, % like JS, unary minus', () => {
    expect(ev('7 / 2')).toBe(3.5);
    expect(ev('7 % 3')).toBe(1);
    expect(ev('-7 % 3')).toBe(-1);
    expect(ev('-x + 1')).toBe(-6);
    expect(ev('- -x')).toBe(7);
    expect(ev('2 + 3 * 4')).toBe(14);
    expect(ev('(2 + 3) * 4')).toBe(20);
    expect(ev('10 - 4 - 3')).toBe(3);
    expect(ev('"a" + "b"')).toBe('ab');
  });
  it('comparisons', () => {
    expect(ev('1 < 2')).toBe(true);
    expect(ev('2 <= 2')).toBe(true);
    expect(ev('3 > 4')).toBe(false);
    expect(ev('4 >= 5')).toBe(false);
    expect(ev('attrs.activation_type == "swiglu"')).toBe(true);
    expect(ev('attrs.activation_type != "relu"')).toBe(true);
    expect(ev('shapes.inputT == [4, 2880]')).toBe(true);
    expect(ev('"a" < "b"')).toBe(true);
  });
  it('and / or / not short-circuit and need booleans', () => {
    expect(ev('t and f')).toBe(false);
    expect(ev('t or f')).toBe(true);
    expect(ev('not f')).toBe(true);
    expect(ev('f and nosuchname')).toBe(false);
    expect(ev('t or nosuchname')).toBe(true);
    expect(ev('not x == 7')).toBe(false); // not binds looser than ==
    expect(exprError(() => ev('1 and t')).message).toContain('"and" expects true/false, got number 1');
  });
  it('conditional x if c else y, right-associative, lazy', () => {
    expect(ev('2 if attrs.k == 4 else 1')).toBe(2);
    expect(ev('1 if f else 2 if f else 3')).toBe(3);
    expect(ev('attrs.block_size if has(attrs, "block_size") else 0')).toBe(0);
    expect(ev('(1 if t else 2) + 10')).toBe(11);
  });
});

describe('functions, members, methods', () => {
  it('min max floor ceil ceilDiv pow2ceil', () => {
    expect(ev('min(3, 1, 2)')).toBe(1);
    expect(ev('max(1, x)')).toBe(7);
    expect(ev('max([1, 9, 3])')).toBe(9);
    expect(ev('floor(7 / 2)')).toBe(3);
    expect(ev('ceil(7 / 2)')).toBe(4);
    expect(ev('ceilDiv(2880, 64)')).toBe(45);
    expect(ev('ceilDiv(2881, 64)')).toBe(46);
    expect(ev('pow2ceil(33)')).toBe(64);
    expect(ev('pow2ceil(32)')).toBe(32);
    expect(ev('pow2ceil(0)')).toBe(1);
  });
  it('dim numel has', () => {
    expect(ev('dim(shapes.fc1T, 1)')).toBe(5760);
    expect(ev('dim(shapes.inputT, ranks.inputT - 1)')).toBe(2880);
    expect(ev('dim(shapes.fc1T, -1)')).toBe(1440);
    expect(ev('numel(shapes.inputT)')).toBe(11520);
    expect(ev('numel([])')).toBe(1);
    expect(ev('has(attrs, "k")')).toBe(true);
    expect(ev('has(attrs, "block_size")')).toBe(false);
    expect(ev('has(device.adapterInfo, "subgroupMinSize")')).toBe(true);
  });
  it('member access and the features set', () => {
    expect(ev('device.limits.maxBufferSize')).toBe(1024);
    expect(ev('tensorDtypes.fc1ScalesT')).toBe('float32');
    expect(ev('repeat.chunk * 10')).toBe(20);
    expect(ev('device.features.has("subgroups")')).toBe(true);
    expect(ev('device.features.has("chromium-experimental-subgroup-matrix")')).toBe(false);
    expect(ev('shapes.inputT[1]')).toBe(2880);
  });
});

describe('errors carry text, position and caret', () => {
  it('unknown name with position and suggestion', () => {
    const e = exprError(() => ev('tunables.workgroupSize * foo'));
    expect(e.pos).toBe(25);
    expect(e.expr).toBe('tunables.workgroupSize * foo');
    expect(e.message).toBe('unknown name "foo" at 25\n  tunables.workgroupSize * foo\n                           ^');
    expect(exprError(() => ev('attr.k')).message).toContain('did you mean "attrs"?');
  });
  it('unknown field suggests and points at the member', () => {
    const e = exprError(() => ev('1 + attrs.kk'));
    expect(e.pos).toBe(4);
    expect(e.detail).toContain('no field "kk" in attrs (did you mean "k"?)');
  });
  it('parse errors', () => {
    expect(exprError(() => parseExpr('min(1, 2')).detail).toBe('expected ")" to close the argument list, found end of expression');
    expect(exprError(() => parseExpr('a < b < c')).pos).toBe(6);
    expect(exprError(() => parseExpr('1 if x')).detail).toContain('expected "else"');
    expect(exprError(() => parseExpr('')).detail).toBe('empty expression');
    expect(exprError(() => parseExpr('a b')).pos).toBe(2);
    expect(exprError(() => parseExpr('(1)(2)')).detail).toContain('only functions and methods can be called');
    expect(exprError(() => parseExpr('a.')).detail).toContain('expected a field name');
  });
  it('evaluation errors: types, arity, ranges, division by zero', () => {
    expect(exprError(() => ev('dim(shapes.inputT, 2)')).detail).toBe('dim(): axis 2 is out of range for shape [4,2880] (rank 2)');
    expect(exprError(() => ev('dim(shapes.inputT, 2)')).pos).toBe(19);
    expect(exprError(() => ev('x / (x - 7)')).detail).toContain('division by zero');
    expect(exprError(() => ev('x % 0')).detail).toContain('modulo by zero');
    expect(exprError(() => ev('ceilDiv(1)')).detail).toBe('ceilDiv() takes 2 arguments, got 1');
    expect(exprError(() => ev('"a" * 2')).detail).toContain('"*" expects a number, got string');
    expect(exprError(() => ev('1 < "a"')).detail).toContain('compares two numbers or two strings');
    expect(exprError(() => ev('cbrt(4)')).detail).toContain('unknown function "cbrt"');
    expect(ev('sqrt(16)')).toBe(4);
    expect(exprError(() => ev('sqrt(-1)')).detail).toContain('sqrt() of negative -1');
    expect(exprError(() => ev('min')).detail).toContain('is a function');
    expect(exprError(() => ev('device.limits.has("x")')).detail).toContain('object has no method "has"');
    expect(exprError(() => ev('1 if x else 2')).detail).toContain('condition of "x if c else y" expects true/false');
  });
});

describe('scopes: lazy derived names, memoization, cycles, contexts', () => {
  it('resolves derived names lazily and once', () => {
    let reads = 0;
    const values = { get attrs() { reads++; return { k: 4 }; } };
    const s = new Scope({ values, derive: { topK: 'attrs.k', twice: 'topK * 2', unused: 'nosuch' } });
    expect(s.eval('twice + topK', 'test')).toBe(12);
    expect(s.eval('twice', 'test')).toBe(8);
    expect(reads).toBe(1);
  });
  it('names the derive in evaluation errors', () => {
    const s = new Scope({ values: { tunables: { a: 1 } }, derive: { hiddenChunkTokens: '4', groupSlots: 'hiddenChunkTokens * foo' } });
    const e = exprError(() => s.eval('groupSlots + 1', 'variants.v.when[0]'));
    expect(e.summary).toBe('derive.groupSlots: unknown name "foo" at 20');
    expect(e.context).toBe('derive.groupSlots');
  });
  it('detects cycles and lists them', () => {
    const s = new Scope({ derive: { a: 'b + 1', b: 'c * 2', c: 'a' } });
    const e = exprError(() => s.eval('a', 'x'));
    expect(e.detail).toBe('cycle in derived names: derive.a -> derive.b -> derive.c -> derive.a');
    expect(e.context).toBe('derive.c');
  });
  it('child scopes shadow and see parents; parents do not see children', () => {
    const root = new Scope({ values: { tunables: { lanes: 32 } }, derive: { lanes: 'tunables.lanes', rows: 'lanes * 2' } });
    const child = root.child({ values: { repeat: { chunk: 1 } }, derive: { lanes: '8', offset: 'repeat.chunk * rows' } });
    expect(child.eval('offset', 't')).toBe(64);
    expect(child.eval('lanes', 't')).toBe(8);
    expect(exprError(() => root.eval('offset', 'root')).detail).toContain('unknown name "offset"');
  });
  it('literal numbers/booleans in derive maps', () => {
    const s = new Scope({ derive: { n: 128, b: true } });
    expect(s.eval('n * 2 if b else 0', 't')).toBe(256);
  });
});

describe('explainFalse', () => {
  it('follows and-chains and derived names down to the false clause', () => {
    const s = new Scope({
      values: { shapes: { fc2T: [32, 2880, 720] }, attrs: { k: 4 } },
      derive: { packSize: '2', interSize: '2880', shapeOk: 'dim(shapes.fc2T, 0) == 32 and dim(shapes.fc2T, 2) * packSize == interSize', ok: 'attrs.k >= 1 and shapeOk' },
    });
    const ex = explainFalse('ok', s)!;
    expect(ex.path).toEqual(['ok', 'shapeOk']);
    expect(ex.clause).toBe('dim(shapes.fc2T, 2) * packSize == interSize');
    expect(formatExplanation(ex)).toBe('ok -> shapeOk -> "dim(shapes.fc2T, 2) * packSize == interSize" is false (1440 == 2880 is false; shapes.fc2T = [32,2880,720], packSize = 2, interSize = 2880)');
    expect(ex.refs).toEqual(['shapes.fc2T']);
    expect(explainFalse('attrs.k == 4', s)).toBeUndefined();
  });
  it('reports a clause that throws', () => {
    const s = new Scope({ values: { shapes: { a: [1] } }, derive: { ok: 'dim(shapes.a, 1) == 1' } });
    const ex = explainFalse('ok', s)!;
    expect(ex.error).toBeInstanceOf(ExprError);
    expect(formatExplanation(ex)).toContain('could not be evaluated: derive.ok: dim(): axis 1 is out of range');
  });
});

describe('parse cache and printing', () => {
  it('compile caches by text', () => {
    expect(compile('a + b')).toBe(compile('a + b'));
  });
  it('prints with minimal parentheses', () => {
    const cases: [string, string][] = [
      ['(a + b) * c', '(a + b) * c'],
      ['a + (b * c)', 'a + b * c'],
      ['a - (b - c)', 'a - (b - c)'],
      ['(a - b) - c', 'a - b - c'],
      ['-(-a)', '- -a'],
      ['(a if b else c) if d else e', '(a if b else c) if d else e'],
      ['a if b else (c if d else e)', 'a if b else c if d else e'],
      ['not (a and b)', 'not (a and b)'],
      ['(not a) and b', 'not a and b'],
      ['(a < b) == c', '(a < b) == c'],
      ['device.features.has("x")', 'device.features.has("x")'],
      ['[a, (b or c)]', '[a, b or c]'],
    ];
    for (const [src, printed] of cases) {
      expect(printExpr(parseExpr(src))).toBe(printed);
      expect(stripPositions(parseExpr(printed))).toEqual(stripPositions(parseExpr(src)));
    }
  });
});
