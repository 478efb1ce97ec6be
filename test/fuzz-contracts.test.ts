/**
 * Fuzz: the contract loader (validateContract: schema, cross-references, every expression parsed) and the expression
 * language (compile + evaluate) never crash and throw only the project's named errors (ContractSchemaError,
 * ExprError), over structural mutations of the shipped contracts, byte mutations of their expressions, grammar-
 * generated expressions (deep nesting included) and random text.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import { ContractSchemaError, validateContract } from '../src/contracts/index.ts';
import { BUILTINS, compile, evaluate, ExprError, recordEnv } from '../src/expr/index.ts';
import { byteMutations, expectOnly, jsonMutations, mutateBytes, mutateJson } from './helpers/fuzz.ts';

const OPS_DIR = 'src/ops/contracts';
const small = readdirSync(OPS_DIR)
  .filter((f) => f.endsWith('.contract.json'))
  .map((f) => JSON.parse(readFileSync(`${OPS_DIR}/${f}`, 'utf8')) as unknown);
const qmoe = ['spec/qmoe.contract.json', 'spec/qmoe.v2.contract.json'].map((f) => JSON.parse(readFileSync(f, 'utf8')) as unknown);

/** Every string in the shipped contracts that parses as an expression: the seeds for expression mutations. */
function expressions(): string[] {
  const out = new Set<string>();
  const stack: unknown[] = [...small, ...qmoe];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') {
      try {
        compile(v);
        if (/[a-z_(]/i.test(v)) out.add(v);
      } catch {
        // not an expression
      }
    } else if (v && typeof v === 'object') stack.push(...Object.values(v));
  }
  return [...out];
}

const env = recordEnv({
  a: 3,
  b: 0,
  c: -2.5,
  n: 1e308,
  s: 'fp16',
  t: true,
  xs: [1, 2, 3],
  shape: [4, 8, 16],
  empty: [],
  rec: { k: 1, nested: { deep: [1, [2, [3]]] } },
  features: new Set(['shader-f16', 'subgroups']),
  shapes: { x: [2, 3], w: [3, 4] },
  attrs: { k: 2, act: 'silu' },
});

describe('fuzz: contract loader', () => {
  it('the shipped contracts validate', () => {
    for (const c of [...small, ...qmoe]) validateContract(c);
  });

  // 8,000 + 2,000 = 10,000 contracts in all.
  it('8,000 structural mutations of the registry-op contracts: only ContractSchemaError', () => {
    fc.assert(
      fc.property(fc.nat({ max: small.length - 1 }), jsonMutations, (i, muts) => {
        expectOnly([ContractSchemaError], () => validateContract(mutateJson(small[i], muts), 'fuzz.contract.json'));
      }),
      { numRuns: 8_000 },
    );
  });

  it('2,000 structural mutations of the QMoE contracts: only ContractSchemaError', () => {
    fc.assert(
      fc.property(fc.nat({ max: qmoe.length - 1 }), jsonMutations, (i, muts) => {
        expectOnly([ContractSchemaError], () => validateContract(mutateJson(qmoe[i], muts), 'fuzz.contract.json'));
      }),
      { numRuns: 2_000 },
    );
  });
});

/** Grammar-generated expressions over the names in `env`, builtins, methods, members and indexing. */
const expr: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('a', 'b', 'c', 'n', 's', 't', 'xs', 'shape', 'empty', 'rec', 'features', 'shapes', 'attrs', 'nope', '0', '1', '2.5', '1e309', '-0', '"x"', "'fp16'", 'true', 'false'),
    fc.tuple(tie('e'), fc.constantFrom('+', '-', '*', '/', '%', '==', '!=', '<', '<=', '>', '>=', 'and', 'or'), tie('e')).map(([x, op, y]) => `${x} ${op} ${y}`),
    fc.tuple(fc.constantFrom('-', 'not '), tie('e')).map(([op, x]) => `${op}${x}`),
    tie('e').map((x) => `(${x})`),
    fc.tuple(tie('e'), tie('e'), tie('e')).map(([x, c, y]) => `${x} if ${c} else ${y}`),
    fc.tuple(fc.constantFrom(...Object.keys(BUILTINS), 'nope'), fc.array(tie('e'), { maxLength: 3 })).map(([f, args]) => `${f}(${args.join(', ')})`),
    fc.tuple(tie('e'), tie('e')).map(([x, i]) => `${x}[${i}]`),
    fc.tuple(tie('e'), fc.constantFrom('k', 'nested', 'deep', 'x', 'has', 'length', '__proto__', 'constructor')).map(([x, m]) => `${x}.${m}`),
    fc.tuple(tie('e'), tie('e')).map(([x, y]) => `${x}.has(${y})`),
    fc.array(tie('e'), { maxLength: 3 }).map((xs) => `[${xs.join(', ')}]`),
  ),
})).e;

/** Very deep nesting of every recursive form. */
const deep: fc.Arbitrary<string> = fc.tuple(fc.nat({ max: 100_000 }), fc.constantFrom('(', '-', 'not ', '[', 'f(', 'x[', '1+', 'a if t else ')).map(([n, form]) => {
  switch (form) {
    case '(':
      return '('.repeat(n) + '1' + ')'.repeat(n);
    case '[':
      return '['.repeat(n) + ']'.repeat(n);
    case 'f(':
      return 'max('.repeat(n) + '1' + ')'.repeat(n);
    case 'x[':
      return 'xs' + '[0]'.repeat(n);
    case '1+':
      return '1+'.repeat(n) + '1';
    default:
      return form.repeat(n) + '1';
  }
});

describe('fuzz: expression parser and evaluator', () => {
  const seeds = expressions();

  function run(text: string): void {
    expectOnly([ExprError], () => evaluate(compile(text), env));
  }

  it('finds expression seeds in the shipped contracts', () => {
    expect(seeds.length).toBeGreaterThan(20);
  });

  // 6,000 + 3,000 + 1,000 + 100 = 10,100 expressions in all.
  it('6,000 grammar-generated expressions: only ExprError', () => {
    fc.assert(fc.property(expr, run), { numRuns: 6_000 });
  });

  it('3,000 byte mutations of the shipped contracts\' expressions: only ExprError', () => {
    const enc = new TextEncoder();
    const dec = new TextDecoder();
    fc.assert(
      fc.property(fc.nat({ max: seeds.length - 1 }), byteMutations, (i, muts) => run(dec.decode(mutateBytes(enc.encode(seeds[i]!), muts)))),
      { numRuns: 3_000 },
    );
  });

  it('1,000 random strings: only ExprError', () => {
    fc.assert(fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: fc.constantFrom(...'()[]{}+-*/%<>=!.,"\' 0123456789aefnotrsux') })), run), {
      numRuns: 1_000,
    });
  });

  it('100 deeply nested expressions (up to 100,000 levels): only ExprError', () => {
    fc.assert(fc.property(deep, run), { numRuns: 100 });
  });
});
