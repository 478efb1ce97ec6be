/** The contract expression language: parse once, evaluate against scopes, explain false conditions. */
export { ExprError } from './errors.ts';
export { tokenize, KEYWORDS, type Token, type TokenKind } from './lexer.ts';
export { printExpr, stripPositions, walk, PREC, type Node, type BinaryOp, type UnaryOp } from './ast.ts';
export { parseExpr, compile, MAX_EXPR_DEPTH, type Compiled } from './parser.ts';
export { evaluate, evaluateNode, recordEnv, UNKNOWN, type Env } from './evaluate.ts';
export { Scope, type ScopeOptions, type ExprSource } from './scope.ts';
export { explainFalse, formatExplanation, refsOf, type FalseExplanation } from './explain.ts';
export { BUILTINS } from './builtins.ts';
export { formatValue, deepEqual, suggest, type Value, type ValueRecord } from './values.ts';

import { recordEnv, evaluate } from './evaluate.ts';
import { compile } from './parser.ts';

/** Convenience: evaluates `text` against a plain record of values. */
export function evalExpr(text: string, values: Readonly<Record<string, unknown>> = {}): unknown {
  return evaluate(compile(text), recordEnv(values));
}
