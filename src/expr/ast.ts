/** AST of the contract expression language. `pos`/`end` are character offsets into the source text. */
export type BinaryOp = 'or' | 'and' | '==' | '!=' | '<' | '<=' | '>' | '>=' | '+' | '-' | '*' | '/' | '%';
export type UnaryOp = '-' | 'not';

interface At {
  pos: number;
  end: number;
}
export type Node =
  | ({ type: 'num'; value: number } & At)
  | ({ type: 'str'; value: string } & At)
  | ({ type: 'bool'; value: boolean } & At)
  | ({ type: 'name'; name: string } & At)
  | ({ type: 'list'; items: Node[] } & At)
  | ({ type: 'member'; object: Node; property: string } & At)
  | ({ type: 'index'; object: Node; index: Node } & At)
  | ({ type: 'call'; callee: Node; args: Node[] } & At)
  | ({ type: 'unary'; op: UnaryOp; operand: Node } & At)
  | ({ type: 'binary'; op: BinaryOp; left: Node; right: Node } & At)
  | ({ type: 'cond'; then: Node; test: Node; else: Node } & At);

/** Precedence levels, loosest first. Comparisons do not chain (`a < b < c` is a parse error). */
export const PREC = { cond: 1, or: 2, and: 3, not: 4, cmp: 5, add: 6, mul: 7, unary: 8, postfix: 9, atom: 10 } as const;

export function binaryPrec(op: BinaryOp): number {
  switch (op) {
    case 'or':
      return PREC.or;
    case 'and':
      return PREC.and;
    case '+':
    case '-':
      return PREC.add;
    case '*':
    case '/':
    case '%':
      return PREC.mul;
    default:
      return PREC.cmp;
  }
}

function nodePrec(n: Node): number {
  switch (n.type) {
    case 'cond':
      return PREC.cond;
    case 'binary':
      return binaryPrec(n.op);
    case 'unary':
      return n.op === 'not' ? PREC.not : PREC.unary;
    case 'member':
    case 'index':
    case 'call':
      return PREC.postfix;
    default:
      return PREC.atom;
  }
}

export function quoteString(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r')}"`;
}

/** Prints an AST back to source with the fewest parentheses that re-parse to the same tree. */
export function printExpr(n: Node, minPrec = 0): string {
  const s = printBare(n);
  return nodePrec(n) < minPrec ? `(${s})` : s;
}

function printBare(n: Node): string {
  switch (n.type) {
    case 'num':
      return String(n.value);
    case 'str':
      return quoteString(n.value);
    case 'bool':
      return n.value ? 'true' : 'false';
    case 'name':
      return n.name;
    case 'list':
      return `[${n.items.map((i) => printExpr(i)).join(', ')}]`;
    case 'member':
      return `${printExpr(n.object, PREC.postfix)}.${n.property}`;
    case 'index':
      return `${printExpr(n.object, PREC.postfix)}[${printExpr(n.index)}]`;
    case 'call':
      return `${printExpr(n.callee, PREC.postfix)}(${n.args.map((a) => printExpr(a)).join(', ')})`;
    case 'unary': {
      if (n.op === 'not') return `not ${printExpr(n.operand, PREC.not)}`;
      const inner = printExpr(n.operand, PREC.unary);
      return inner.startsWith('-') ? `- ${inner}` : `-${inner}`;
    }
    case 'binary': {
      const p = binaryPrec(n.op);
      const leftMin = p === PREC.cmp ? p + 1 : p; // comparisons don't chain; others are left-associative
      return `${printExpr(n.left, leftMin)} ${n.op} ${printExpr(n.right, p + 1)}`;
    }
    case 'cond':
      return `${printExpr(n.then, PREC.or)} if ${printExpr(n.test, PREC.or)} else ${printExpr(n.else, PREC.cond)}`;
  }
}

/** A copy without source positions, for structural comparison. */
export function stripPositions(n: Node): unknown {
  const { pos: _p, end: _e, ...rest } = n as Node & Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(rest)) {
    if (Array.isArray(v)) out[k] = v.map((x) => stripPositions(x as Node));
    else if (v && typeof v === 'object') out[k] = stripPositions(v as Node);
    else out[k] = v;
  }
  return out;
}

/** Calls `visit` on every node, parents first. */
export function walk(n: Node, visit: (n: Node) => void): void {
  visit(n);
  switch (n.type) {
    case 'list':
      n.items.forEach((i) => walk(i, visit));
      break;
    case 'member':
      walk(n.object, visit);
      break;
    case 'index':
      walk(n.object, visit);
      walk(n.index, visit);
      break;
    case 'call':
      walk(n.callee, visit);
      n.args.forEach((a) => walk(a, visit));
      break;
    case 'unary':
      walk(n.operand, visit);
      break;
    case 'binary':
      walk(n.left, visit);
      walk(n.right, visit);
      break;
    case 'cond':
      walk(n.then, visit);
      walk(n.test, visit);
      walk(n.else, visit);
      break;
    default:
      break;
  }
}
