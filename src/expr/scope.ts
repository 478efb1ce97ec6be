import { ExprError } from './errors.ts';
import { UNKNOWN, evaluate, type Env } from './evaluate.ts';
import { compile, type Compiled } from './parser.ts';

/** An expression as it appears in JSON: a string is parsed; numbers and booleans are literals. */
export type ExprSource = string | number | boolean;

export interface ScopeOptions {
  /** Fixed values (namespaces such as attrs, shapes, device, repeat). */
  values?: Readonly<Record<string, unknown>>;
  /** Derived names: name → expression, evaluated lazily in this scope and memoized. */
  derive?: Readonly<Record<string, ExprSource>>;
  /** Label for error contexts of derived names: `${label}.${name}` (default "derive"). */
  label?: string;
}

type Memo = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * A lexical scope: values, then lazily derived names, then the parent. A derived name is evaluated in
 * the scope that defines it (so a root derive never sees a pass's names), once; errors are memoized
 * too. Cycles raise an ExprError listing the cycle.
 */
export class Scope implements Env {
  private readonly values: Readonly<Record<string, unknown>>;
  private readonly derive: Readonly<Record<string, ExprSource>>;
  private readonly memo = new Map<string, Memo>();
  private readonly stack: string[];
  readonly label: string;

  constructor(
    opts: ScopeOptions = {},
    readonly parent?: Scope,
  ) {
    this.values = opts.values ?? {};
    this.derive = opts.derive ?? {};
    this.label = opts.label ?? 'derive';
    this.stack = parent ? parent.stack : [];
  }

  /** A child scope (e.g. a variant's or a pass's own derive and `repeat`). */
  child(opts: ScopeOptions): Scope {
    return new Scope(opts, this);
  }

  lookup(name: string, ref?: { expr: string; pos: number }): unknown {
    if (Object.prototype.hasOwnProperty.call(this.values, name)) return this.values[name];
    if (Object.prototype.hasOwnProperty.call(this.derive, name)) return this.derived(name, ref);
    return this.parent ? this.parent.lookup(name, ref) : UNKNOWN;
  }

  names(): Iterable<string> {
    const own = [...Object.keys(this.values), ...Object.keys(this.derive)];
    return this.parent ? [...own, ...this.parent.names()] : own;
  }

  /** Whether `name` resolves here or in a parent. */
  has(name: string): boolean {
    return this.lookup(name) !== UNKNOWN;
  }

  /** Where a derived name is defined: its scope and compiled expression (undefined for values/unknown). */
  definition(name: string): { scope: Scope; compiled: Compiled | undefined; source: ExprSource } | undefined {
    if (Object.prototype.hasOwnProperty.call(this.values, name)) return undefined;
    if (Object.prototype.hasOwnProperty.call(this.derive, name)) {
      const source = this.derive[name]!;
      return { scope: this, compiled: typeof source === 'string' ? compile(source) : undefined, source };
    }
    return this.parent?.definition(name);
  }

  /** This scope's own derived names (not the parents'). */
  ownDerivedNames(): string[] {
    return Object.keys(this.derive);
  }

  /** Evaluates an expression in this scope; errors get `context` (e.g. `variants.x.when[0]`). */
  eval(source: ExprSource, context: string): unknown {
    if (typeof source !== 'string') return source;
    try {
      return evaluate(compile(source), this);
    } catch (e) {
      if (e instanceof ExprError) e.withContext(context);
      throw e;
    }
  }

  private derived(name: string, ref?: { expr: string; pos: number }): unknown {
    const m = this.memo.get(name);
    if (m) {
      if (m.ok) return m.value;
      throw m.error;
    }
    const key = `${this.label}.${name}`;
    const at = this.stack.indexOf(key);
    if (at >= 0) {
      const cycle = [...this.stack.slice(at), key].join(' -> ');
      // Not memoized: the cycle is reported from the innermost reference.
      throw new ExprError(`cycle in derived names: ${cycle}`, ref?.expr ?? name, ref?.pos ?? 0, this.stack.at(-1));
    }
    this.stack.push(key);
    try {
      const value = this.eval(this.derive[name]!, key);
      this.memo.set(name, { ok: true, value });
      return value;
    } catch (error) {
      this.memo.set(name, { ok: false, error });
      throw error;
    } finally {
      this.stack.pop();
    }
  }
}
