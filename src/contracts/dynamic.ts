/**
 * Dynamic values at resolve time. A uniform field whose expression reads a dynamic attribute (directly or through
 * derived names) is compiled once into a residual expression: every static sub-expression is evaluated in its own
 * scope and replaced by its value, derived names that depend on dynamic attributes are inlined, and only the
 * dynamic `attrs.X` reads remain. Re-evaluating the residual for new dynamic values is a walk over a few nodes;
 * no scope, derive memo or contract lookup is involved (the program layer does it for every step).
 */
import { compile, evaluate, UNKNOWN, type Env, type ExprSource, type Node, type Scope } from '../expr/index.ts';

/** A compiled dynamic expression: `eval(values)` with values for the contract's dynamic attributes. */
export interface DynamicExpr {
  /** The original expression text (for messages). */
  readonly source: string;
  eval(dynamic: Readonly<Record<string, unknown>>): unknown;
}

type Const = { value: unknown } | { error: unknown };

class Residualizer {
  readonly consts: Const[] = [];
  private readonly memo = new Map<Scope, Map<string, boolean>>();

  constructor(private readonly dyn: ReadonlySet<string>) {}

  /** Whether a node reads a dynamic attribute (through derived names too). */
  isDynamic(n: Node, scope: Scope): boolean {
    switch (n.type) {
      case 'num':
      case 'str':
      case 'bool':
        return false;
      case 'name': {
        if (n.name === 'attrs') return this.dyn.size > 0;
        const def = scope.definition(n.name);
        if (!def?.compiled) return false;
        let m = this.memo.get(def.scope);
        if (!m) this.memo.set(def.scope, (m = new Map()));
        let d = m.get(n.name);
        if (d === undefined) {
          m.set(n.name, false); // cycles are load errors; never loop here
          d = this.isDynamic(def.compiled.ast, def.scope);
          m.set(n.name, d);
        }
        return d;
      }
      case 'member':
        if (n.object.type === 'name' && n.object.name === 'attrs') return this.dyn.has(n.property);
        return this.isDynamic(n.object, scope);
      case 'index':
        return this.isDynamic(n.object, scope) || this.isDynamic(n.index, scope);
      case 'list':
        return n.items.some((i) => this.isDynamic(i, scope));
      case 'call':
        return this.isDynamic(n.callee, scope) || n.args.some((a) => this.isDynamic(a, scope));
      case 'unary':
        return this.isDynamic(n.operand, scope);
      case 'binary':
        return this.isDynamic(n.left, scope) || this.isDynamic(n.right, scope);
      case 'cond':
        return this.isDynamic(n.test, scope) || this.isDynamic(n.then, scope) || this.isDynamic(n.else, scope);
    }
  }

  private constant(text: string, n: Node, scope: Scope): Node {
    let c: Const;
    try {
      c = { value: evaluate({ text, ast: n }, scope) };
    } catch (error) {
      c = { error }; // raised only if the residual reaches it (an untaken branch may fail harmlessly)
    }
    if ('value' in c && (typeof c.value === 'number' || typeof c.value === 'boolean' || typeof c.value === 'string')) {
      const v = c.value;
      return typeof v === 'number' ? { type: 'num', value: v, pos: n.pos, end: n.end } : typeof v === 'boolean' ? { type: 'bool', value: v, pos: n.pos, end: n.end } : { type: 'str', value: v, pos: n.pos, end: n.end };
    }
    this.consts.push(c);
    return { type: 'name', name: `$${this.consts.length - 1}`, pos: n.pos, end: n.end };
  }

  residual(n: Node, text: string, scope: Scope): Node {
    if (!this.isDynamic(n, scope)) return this.constant(text, n, scope);
    const r = (c: Node) => this.residual(c, text, scope);
    switch (n.type) {
      case 'name': {
        if (n.name === 'attrs') return n;
        const def = scope.definition(n.name)!;
        return this.residual(def.compiled!.ast, def.compiled!.text, def.scope);
      }
      case 'member':
        if (n.object.type === 'name' && n.object.name === 'attrs') return n;
        return { ...n, object: r(n.object) };
      case 'index':
        return { ...n, object: r(n.object), index: r(n.index) };
      case 'list':
        return { ...n, items: n.items.map(r) };
      case 'call':
        return { ...n, callee: n.callee.type === 'name' ? n.callee : r(n.callee), args: n.args.map(r) };
      case 'unary':
        return { ...n, operand: r(n.operand) };
      case 'binary':
        return { ...n, left: r(n.left), right: r(n.right) };
      case 'cond':
        return { ...n, test: r(n.test), then: r(n.then), else: r(n.else) };
      default:
        return n;
    }
  }
}

/** Whether `src` (evaluated in `scope`) reads a dynamic attribute, directly or through derived names. */
export function readsDynamic(src: ExprSource, scope: Scope, dynamic: ReadonlySet<string>): boolean {
  return typeof src === 'string' && dynamic.size > 0 && new Residualizer(dynamic).isDynamic(compile(src).ast, scope);
}

/**
 * Compiles `src` (evaluated in `scope`) for re-evaluation with new dynamic attribute values; undefined when it
 * reads no dynamic attribute. `attrs` holds the plan's static attribute values (a residual reading `attrs` as a
 * whole sees them with the dynamic values laid over).
 */
export function compileDynamic(src: ExprSource, scope: Scope, dynamic: ReadonlySet<string>, attrs: Readonly<Record<string, unknown>>): DynamicExpr | undefined {
  if (typeof src !== 'string' || dynamic.size === 0) return undefined;
  const rz = new Residualizer(dynamic);
  const { ast, text } = compile(src);
  if (!rz.isDynamic(ast, scope)) return undefined;
  const res = rz.residual(ast, text, scope);
  const consts = rz.consts;
  // Dynamic attributes a call leaves out take the value the plan was resolved with (the contract default).
  const current: Record<string, unknown> = { ...attrs };
  const keys = [...dynamic];
  const base = keys.map((k) => attrs[k]);
  const env: Env = {
    lookup(name) {
      if (name === 'attrs') return current;
      const k = name[0] === '$' ? consts[Number(name.slice(1))] : undefined;
      if (!k) return UNKNOWN;
      if ('error' in k) throw k.error;
      return k.value;
    },
    names: () => ['attrs'],
  };
  const compiled = { text, ast: res };
  return {
    source: text,
    eval(values) {
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!;
        const v = values[k];
        current[k] = v === undefined ? base[i] : v;
      }
      return evaluate(compiled, env);
    },
  };
}
