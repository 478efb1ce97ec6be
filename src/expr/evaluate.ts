import type { Node } from './ast.ts';
import { BUILTINS, BuiltinError, callMethod } from './builtins.ts';
import { ExprError } from './errors.ts';
import type { Compiled } from './parser.ts';
import { deepEqual, formatValue, isList, isRecord, suggest, typeName } from './values.ts';

/** Marker returned by Env.lookup for a name it does not know. */
export const UNKNOWN: unique symbol = Symbol('unknown name');

/** Where an identifier resolves. `ref` is the referencing expression and offset, for error messages. */
export interface Env {
  lookup(name: string, ref: { expr: string; pos: number }): unknown;
  /** Known names, for "did you mean" suggestions. */
  names(): Iterable<string>;
}

/** A plain environment over a record of values (no derived names). */
export function recordEnv(values: Readonly<Record<string, unknown>>): Env {
  return {
    lookup: (name) => (Object.prototype.hasOwnProperty.call(values, name) ? values[name] : UNKNOWN),
    names: () => Object.keys(values),
  };
}

/** Evaluates a compiled expression. Throws ExprError (without context; callers add it). */
export function evaluate(c: Compiled, env: Env): unknown {
  return new Evaluator(c.text, env).ev(c.ast);
}

/** Evaluates one node of a compiled expression (used by explanations of sub-clauses). */
export function evaluateNode(text: string, node: Node, env: Env): unknown {
  return new Evaluator(text, env).ev(node);
}

class Evaluator {
  constructor(
    private readonly text: string,
    private readonly env: Env,
  ) {}

  private fail(msg: string, n: Node): never {
    throw new ExprError(msg, this.text, n.pos);
  }
  private num(v: unknown, n: Node, what: string): number {
    if (typeof v !== 'number') this.fail(`${what} expects a number, got ${typeName(v)} ${formatValue(v)}`, n);
    return v;
  }
  private bool(v: unknown, n: Node, what: string): boolean {
    if (typeof v !== 'boolean') this.fail(`${what} expects true/false, got ${typeName(v)} ${formatValue(v)}`, n);
    return v;
  }

  ev(n: Node): unknown {
    switch (n.type) {
      case 'num':
      case 'str':
      case 'bool':
        return n.value;
      case 'name': {
        if (n.name in BUILTINS) this.fail(`"${n.name}" is a function; call it as ${n.name}(...)`, n);
        const v = this.env.lookup(n.name, { expr: this.text, pos: n.pos });
        if (v === UNKNOWN) this.fail(`unknown name "${n.name}"${suggest(n.name, this.env.names())}`, n);
        return v;
      }
      case 'list':
        return n.items.map((i) => this.ev(i));
      case 'member': {
        const o = this.ev(n.object);
        if (!isRecord(o)) this.fail(`cannot read field "${n.property}" of ${typeName(o)} ${formatValue(o)}`, n);
        const v = o[n.property];
        if (v === undefined || !Object.prototype.hasOwnProperty.call(o, n.property)) {
          const keys = Object.keys(o);
          const hint = suggest(n.property, keys) || (keys.length <= 12 ? ` (fields: ${keys.join(', ') || 'none'})` : '');
          this.fail(`no field "${n.property}" in ${printPath(n.object)}${hint}; guard optional fields with has(obj, "${n.property}")`, n);
        }
        return v;
      }
      case 'index': {
        const o = this.ev(n.object);
        const k = this.ev(n.index);
        if (isList(o)) {
          const i = this.num(k, n.index, 'list index');
          const j = i < 0 ? o.length + i : i;
          if (!Number.isInteger(i) || j < 0 || j >= o.length) this.fail(`index ${i} out of range for ${formatValue(o)}`, n.index);
          return o[j];
        }
        if (isRecord(o) && typeof k === 'string') {
          if (o[k] === undefined) this.fail(`no field ${formatValue(k)} in ${printPath(n.object)}`, n.index);
          return o[k];
        }
        return this.fail(`cannot index ${typeName(o)} with ${typeName(k)}`, n);
      }
      case 'call':
        return this.call(n);
      case 'unary': {
        const v = this.ev(n.operand);
        return n.op === 'not' ? !this.bool(v, n, '"not"') : -this.num(v, n, 'unary "-"');
      }
      case 'cond':
        return this.bool(this.ev(n.test), n.test, 'the condition of "x if c else y"') ? this.ev(n.then) : this.ev(n.else);
      case 'binary':
        return this.binary(n);
    }
  }

  private call(n: Extract<Node, { type: 'call' }>): unknown {
    const argNode = (e: BuiltinError) => (e.argIndex !== undefined ? (n.args[e.argIndex] ?? n) : n);
    if (n.callee.type === 'member') {
      const obj = this.ev(n.callee.object);
      const args = n.args.map((a) => this.ev(a));
      try {
        return callMethod(obj, n.callee.property, args);
      } catch (e) {
        if (e instanceof BuiltinError) this.fail(e.message, argNode(e));
        throw e;
      }
    }
    const name = n.callee.type === 'name' ? n.callee.name : '';
    const fn = BUILTINS[name];
    if (!fn || !Object.prototype.hasOwnProperty.call(BUILTINS, name)) {
      this.fail(`unknown function "${name}"${suggest(name, Object.keys(BUILTINS))}; functions: ${Object.keys(BUILTINS).join(', ')}`, n);
    }
    const args = n.args.map((a) => this.ev(a));
    try {
      return fn(args);
    } catch (e) {
      if (e instanceof BuiltinError) this.fail(e.message, argNode(e));
      throw e;
    }
  }

  private binary(n: Extract<Node, { type: 'binary' }>): unknown {
    const { op } = n;
    if (op === 'and' || op === 'or') {
      const l = this.bool(this.ev(n.left), n.left, `"${op}"`);
      if (op === 'and' ? !l : l) return l;
      return this.bool(this.ev(n.right), n.right, `"${op}"`);
    }
    const l = this.ev(n.left);
    const r = this.ev(n.right);
    switch (op) {
      case '==':
        return deepEqual(l, r);
      case '!=':
        return !deepEqual(l, r);
      case '<':
      case '<=':
      case '>':
      case '>=': {
        if (!((typeof l === 'number' && typeof r === 'number') || (typeof l === 'string' && typeof r === 'string'))) {
          this.fail(`"${op}" compares two numbers or two strings, got ${typeName(l)} and ${typeName(r)}`, n);
        }
        const a = l as number;
        const b = r as number;
        return op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : a >= b;
      }
      case '+':
        if (typeof l === 'string' && typeof r === 'string') return l + r;
        return this.num(l, n.left, '"+"') + this.num(r, n.right, '"+"');
      case '-':
        return this.num(l, n.left, '"-"') - this.num(r, n.right, '"-"');
      case '*':
        return this.num(l, n.left, '"*"') * this.num(r, n.right, '"*"');
      case '/':
      case '%': {
        const a = this.num(l, n.left, `"${op}"`);
        const b = this.num(r, n.right, `"${op}"`);
        if (b === 0) this.fail(`${op === '/' ? 'division' : 'modulo'} by zero (guard the divisor, e.g. max(1, x))`, n.right);
        return op === '/' ? a / b : a % b;
      }
    }
  }
}

function printPath(n: Node): string {
  if (n.type === 'name') return n.name;
  if (n.type === 'member') return `${printPath(n.object)}.${n.property}`;
  return 'the value';
}
