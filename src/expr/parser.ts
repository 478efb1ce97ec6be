import type { BinaryOp, Node } from './ast.ts';
import { ExprError } from './errors.ts';
import { tokenize, type Token } from './lexer.ts';

/**
 * Recursive-descent parser. Grammar, loosest first (Python-like):
 *   expr    := or ("if" or "else" expr)?          conditional, right-associative
 *   or      := and ("or" and)*
 *   and     := not ("and" not)*
 *   not     := "not" not | cmp
 *   cmp     := add (("=="|"!="|"<"|"<="|">"|">=") add)?   no chaining
 *   add     := mul (("+"|"-") mul)*
 *   mul     := unary (("*"|"/"|"%") unary)*
 *   unary   := "-" unary | postfix
 *   postfix := atom ("." IDENT | "(" args ")" | "[" expr "]")*
 *   atom    := NUMBER | STRING | "true" | "false" | IDENT | "(" expr ")" | "[" (expr ("," expr)*)? "]"
 */
const CMP_OPS = new Set(['==', '!=', '<', '<=', '>', '>=']);

/**
 * Deepest expression tree accepted (nested parentheses, operator chains, calls, indexing together). Evaluation and
 * explanations recurse over the tree, so a deeper one would overflow the stack; no contract needs more than a few
 * dozen levels.
 */
export const MAX_EXPR_DEPTH = 256;

class Parser {
  private i = 0;
  private depth = 0;
  /** Counts nesting (recursion and left-associative chains alike); fails past MAX_EXPR_DEPTH. */
  private deeper(n = 1): void {
    this.depth += n;
    if (this.depth > MAX_EXPR_DEPTH) {
      this.fail(`expression nests deeper than ${MAX_EXPR_DEPTH} levels (parentheses, operators, calls or indexing); split it into derived names`);
    }
  }
  constructor(
    private readonly src: string,
    private readonly toks: Token[],
  ) {}

  private get tok(): Token {
    return this.toks[this.i]!;
  }
  private next(): Token {
    return this.toks[this.i++]!;
  }
  private isOp(text: string): boolean {
    return this.tok.kind === 'op' && this.tok.text === text;
  }
  private atEnd(): boolean {
    return this.tok.kind === 'eof';
  }
  private isKw(text: string): boolean {
    return this.tok.kind === 'kw' && this.tok.text === text;
  }
  private fail(msg: string, tok = this.tok): never {
    throw new ExprError(msg, this.src, tok.pos);
  }
  private describe(t: Token): string {
    return t.kind === 'eof' ? 'end of expression' : t.kind === 'str' ? 'a string' : `"${t.text}"`;
  }
  private expectOp(text: string, what: string): Token {
    if (!this.isOp(text)) this.fail(`expected "${text}" ${what}, found ${this.describe(this.tok)}`);
    return this.next();
  }

  parseTop(): Node {
    if (this.atEnd()) this.fail('empty expression');
    const n = this.expr();
    if (!this.atEnd()) this.fail(`unexpected ${this.describe(this.tok)} after a complete expression`);
    return n;
  }

  expr(): Node {
    const at = this.depth;
    this.deeper();
    try {
      const then = this.or();
      if (!this.isKw('if')) return then;
      this.next();
      const test = this.or();
      if (!this.isKw('else')) this.fail(`expected "else" in conditional "x if c else y", found ${this.describe(this.tok)}`);
      this.next();
      const other = this.expr();
      return { type: 'cond', then, test, else: other, pos: then.pos, end: other.end };
    } finally {
      this.depth = at;
    }
  }

  private logical(op: 'or' | 'and', sub: () => Node): Node {
    const at = this.depth;
    let left = sub();
    while (this.isKw(op)) {
      this.deeper();
      this.next();
      const right = sub();
      left = { type: 'binary', op, left, right, pos: left.pos, end: right.end };
    }
    this.depth = at;
    return left;
  }
  private or(): Node {
    return this.logical('or', () => this.and());
  }
  private and(): Node {
    return this.logical('and', () => this.not());
  }
  private not(): Node {
    if (this.isKw('not')) {
      const t = this.next();
      this.deeper();
      const operand = this.not();
      this.depth--;
      return { type: 'unary', op: 'not', operand, pos: t.pos, end: operand.end };
    }
    return this.cmp();
  }
  private cmp(): Node {
    const left = this.add();
    if (this.tok.kind !== 'op' || !CMP_OPS.has(this.tok.text)) return left;
    const op = this.next().text as BinaryOp;
    const right = this.add();
    if (this.tok.kind === 'op' && CMP_OPS.has(this.tok.text)) {
      this.fail('comparisons do not chain; write "a < b and b < c"');
    }
    return { type: 'binary', op, left, right, pos: left.pos, end: right.end };
  }
  private arith(ops: string, sub: () => Node): Node {
    const at = this.depth;
    let left = sub();
    while (this.tok.kind === 'op' && ops.includes(this.tok.text) && this.tok.text.length === 1) {
      this.deeper();
      const op = this.next().text as BinaryOp;
      const right = sub();
      left = { type: 'binary', op, left, right, pos: left.pos, end: right.end };
    }
    this.depth = at;
    return left;
  }
  private add(): Node {
    return this.arith('+-', () => this.mul());
  }
  private mul(): Node {
    return this.arith('*/%', () => this.unary());
  }
  private unary(): Node {
    if (this.isOp('-')) {
      const t = this.next();
      this.deeper();
      const operand = this.unary();
      this.depth--;
      return { type: 'unary', op: '-', operand, pos: t.pos, end: operand.end };
    }
    return this.postfix();
  }
  private postfix(): Node {
    const at = this.depth;
    let n = this.atom();
    for (;;) {
      if (this.isOp('.') || this.isOp('(') || this.isOp('[')) this.deeper();
      if (this.isOp('.')) {
        this.next();
        const t = this.tok;
        if (t.kind !== 'ident') this.fail(`expected a field name after ".", found ${this.describe(t)}`);
        this.next();
        n = { type: 'member', object: n, property: t.text, pos: n.pos, end: t.end };
      } else if (this.isOp('(')) {
        if (n.type !== 'name' && n.type !== 'member') this.fail('only functions and methods can be called');
        this.next();
        const args = this.items(')', 'to close the argument list');
        n = { type: 'call', callee: n, args, pos: n.pos, end: this.toks[this.i - 1]!.end };
      } else if (this.isOp('[')) {
        this.next();
        const index = this.expr();
        const close = this.expectOp(']', 'to close the index');
        n = { type: 'index', object: n, index, pos: n.pos, end: close.end };
      } else {
        this.depth = at;
        return n;
      }
    }
  }
  /** Comma-separated expressions up to `close` (consumed). */
  private items(close: string, what: string): Node[] {
    const out: Node[] = [];
    if (this.isOp(close)) {
      this.next();
      return out;
    }
    for (;;) {
      out.push(this.expr());
      if (this.isOp(',')) {
        this.next();
        continue;
      }
      this.expectOp(close, what);
      return out;
    }
  }
  private atom(): Node {
    const t = this.tok;
    switch (t.kind) {
      case 'num':
        this.next();
        return { type: 'num', value: t.value!, pos: t.pos, end: t.end };
      case 'str':
        this.next();
        return { type: 'str', value: t.text, pos: t.pos, end: t.end };
      case 'ident':
        this.next();
        return { type: 'name', name: t.text, pos: t.pos, end: t.end };
      case 'kw':
        if (t.text === 'true' || t.text === 'false') {
          this.next();
          return { type: 'bool', value: t.text === 'true', pos: t.pos, end: t.end };
        }
        return this.fail(`unexpected keyword "${t.text}"`);
      case 'op':
        if (t.text === '(') {
          this.next();
          const inner = this.expr();
          const close = this.expectOp(')', 'to close "("');
          return { ...inner, pos: t.pos, end: close.end }; // the span covers the parentheses
        }
        if (t.text === '[') {
          this.next();
          const items = this.items(']', 'to close the list');
          return { type: 'list', items, pos: t.pos, end: this.toks[this.i - 1]!.end };
        }
        return this.fail(`unexpected ${this.describe(t)}`);
      default:
        return this.fail('unexpected end of expression');
    }
  }
}

/** Parses an expression into an AST (no caching). Throws ExprError with the position. */
export function parseExpr(src: string): Node {
  return new Parser(src, tokenize(src)).parseTop();
}

/** A parsed expression: the source text and its AST. */
export interface Compiled {
  readonly text: string;
  readonly ast: Node;
}

const cache = new Map<string, Compiled>();

/** Parses once per distinct text (cached). */
export function compile(src: string): Compiled {
  let c = cache.get(src);
  if (!c) {
    if (cache.size >= 10_000) cache.clear();
    c = { text: src, ast: parseExpr(src) };
    cache.set(src, c);
  }
  return c;
}
