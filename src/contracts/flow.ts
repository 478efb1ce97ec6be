/**
 * Load-time name and value-flow analysis of a contract (after the schema passed and every expression parsed):
 *  - every name an expression reads resolves (a derived name in a scope it can see, a namespace, a builtin);
 *  - derived names form no cycle (the cycle is reported with its chain);
 *  - a dynamic attribute (`"dynamic": true`: positions, KV lengths, seeds) reaches only uniform fields: never a
 *    `when`, a dispatch size, an output or intermediate shape, a repeat count, a pass derive (template context) or
 *    a dynamic bound, directly or through derived names. Errors name the expression and the chain to the attribute.
 * Scoping follows Scope: a derived name is evaluated where it is defined (root, variant, enclosing repeat groups,
 * pass), so a root derive never sees a variant's names.
 */
import { BUILTINS, compile, type ExprSource, type Node } from '../expr/index.ts';
import type { KernelContract, PassSpec } from './types.ts';

type Problem = { path: string; message: string };

/**
 * Namespaces the resolver puts in every scope (`repeat` inside passes; `kernel` in a pass that names a registry
 * kernel: its workgroup size and WGSL constants; `kernels`: those of every kernel the contract names).
 */
export const NAMESPACES = new Set(['attrs', 'tunables', 'tensorDtypes', 'device', 'shapes', 'ranks', 'repeat', 'kernel', 'kernels']);

interface Level {
  derive: Readonly<Record<string, ExprSource>>;
  parent?: Level;
  /** JSON path of this level's derive map, for messages. */
  path: string;
}

/** A chain from an expression to the dynamic attribute it reads, e.g. ["kvLen", "attrs.kv_len"]; undefined: static. */
type Chain = string[] | undefined;

export class FlowAnalysis {
  private readonly memo = new Map<Level, Map<string, Chain>>();
  private readonly stack: string[] = [];
  private readonly reported = new Set<string>();

  constructor(
    private readonly dynamic: ReadonlySet<string>,
    private readonly out: Problem[],
  ) {}

  /** The dynamic chain of an expression evaluated at `level`; unknown names and cycles are reported under `path`. */
  chain(src: ExprSource | undefined, level: Level, path: string): Chain {
    if (typeof src !== 'string') return undefined;
    let ast: Node;
    try {
      ast = compile(src).ast;
    } catch {
      return undefined; // parse errors are reported by the schema checks
    }
    return this.node(ast, level, path);
  }

  private node(n: Node, level: Level, path: string): Chain {
    switch (n.type) {
      case 'num':
      case 'str':
      case 'bool':
        return undefined;
      case 'name':
        if (n.name === 'attrs') return this.dynamic.size ? ['attrs (as a whole)'] : undefined;
        return this.name(n.name, level, path);
      case 'member':
        if (n.object.type === 'name' && n.object.name === 'attrs') return this.dynamic.has(n.property) ? [`attrs.${n.property}`] : undefined;
        return this.node(n.object, level, path);
      case 'index':
        return this.first([n.object, n.index], level, path);
      case 'list':
        return this.first(n.items, level, path);
      case 'call':
        if (n.callee.type === 'name') {
          if (!(n.callee.name in BUILTINS)) this.report(path, `calls unknown function ${n.callee.name}(); functions: ${Object.keys(BUILTINS).join(', ')}`);
          return this.first(n.args, level, path);
        }
        return this.first([n.callee, ...n.args], level, path);
      case 'unary':
        return this.node(n.operand, level, path);
      case 'binary':
        return this.first([n.left, n.right], level, path);
      case 'cond':
        return this.first([n.test, n.then, n.else], level, path);
    }
  }

  private first(nodes: readonly Node[], level: Level, path: string): Chain {
    let found: Chain;
    for (const c of nodes) {
      // Every operand is visited, so unknown names in later operands are still reported.
      const ch = this.node(c, level, path);
      found ??= ch;
    }
    return found;
  }

  private name(name: string, level: Level, path: string): Chain {
    for (let l: Level | undefined = level; l; l = l.parent) {
      if (!Object.prototype.hasOwnProperty.call(l.derive, name)) continue;
      let memo = this.memo.get(l);
      if (!memo) this.memo.set(l, (memo = new Map()));
      if (memo.has(name)) return memo.get(name);
      const key = `${l.path}.${name}`;
      const at = this.stack.indexOf(key);
      if (at >= 0) {
        this.report(key, `cycle in derived names: ${[...this.stack.slice(at), key].join(' -> ')}`);
        return undefined;
      }
      this.stack.push(key);
      const inner = this.chain(l.derive[name], l, key);
      this.stack.pop();
      const c = inner ? [name, ...inner] : undefined;
      memo.set(name, c);
      return c;
    }
    if (NAMESPACES.has(name) || name.startsWith('$')) return undefined;
    if (name in BUILTINS) return undefined; // "is a function" is reported when evaluated
    this.report(path, `unknown name "${name}"; not a derived name visible here nor a namespace (${[...NAMESPACES].join(', ')})`);
    return undefined;
  }

  private report(path: string, message: string): void {
    const key = `${path}\n${message}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    this.out.push({ path, message });
  }
}

/** Adds the flow problems of a contract to `out`. */
export function flowProblems(c: KernelContract, out: Problem[]): void {
  const dynamic = new Set(Object.entries(c.attributes ?? {}).filter(([, a]) => a.dynamic).map(([k]) => k));
  const fa = new FlowAnalysis(dynamic, out);
  const root: Level = { derive: c.derive ?? {}, path: 'derive' };
  const mustBeStatic = (src: ExprSource | undefined, level: Level, path: string, what: string) => {
    const ch = fa.chain(src, level, path);
    if (ch) out.push({ path, message: `${what} "${String(src)}" depends on dynamic attribute ${ch.at(-1)}${ch.length > 1 ? ` (through ${ch.slice(0, -1).join(' -> ')})` : ''}; a dynamic value may reach uniform fields only` });
  };
  const shape = (src: string | readonly ExprSource[], level: Level, path: string, what: string) => {
    if (typeof src === 'string') mustBeStatic(src, level, path, what);
    else src.forEach((d, i) => mustBeStatic(d, level, `${path}[${i}]`, what));
  };
  // Every derived name is checked for names and cycles even when nothing uses it.
  for (const k of Object.keys(root.derive)) fa.chain(root.derive[k], root, `derive.${k}`);
  for (const [k, a] of Object.entries(c.attributes ?? {})) {
    if (typeof a.dynamic === 'object') {
      for (const b of ['min', 'max'] as const) if (a.dynamic[b] !== undefined) mustBeStatic(a.dynamic[b], root, `attributes.${k}.dynamic.${b}`, 'the bound');
    }
  }
  for (const [k, o] of Object.entries(c.outputs)) shape(o.shape, root, `outputs.${k}.shape`, 'the output shape');
  c.variants.forEach((v, vi) => {
    const vp = `variants[${vi}] (${v.id})`;
    const vl: Level = { derive: v.derive ?? {}, parent: root, path: `${vp}.derive` };
    for (const k of Object.keys(vl.derive)) fa.chain(vl.derive[k], vl, `${vp}.derive.${k}`);
    (v.when ?? []).forEach((w, i) => mustBeStatic(w, vl, `${vp}.when[${i}]`, 'the condition'));
    (v.intermediates ?? []).forEach((m, i) => shape(m.shape, vl, `${vp}.intermediates[${i}].shape`, 'the intermediate shape'));
    const walk = (passes: readonly PassSpec[], parent: Level, base: string) => {
      passes.forEach((p, pi) => {
        const pp = `${base}[${pi}] (${p.id})`;
        if (p.repeat) mustBeStatic(p.repeat.count, parent, `${pp}.repeat.count`, 'the repeat count');
        const pl: Level = p.derive ? { derive: p.derive, parent, path: `${pp}.derive` } : parent;
        for (const k of Object.keys(p.derive ?? {})) mustBeStatic(p.derive![k], pl, `${pp}.derive.${k}`, 'the pass derive (a template context value)');
        for (const axis of ['x', 'y', 'z'] as const) if (p.dispatch?.[axis] !== undefined) mustBeStatic(p.dispatch[axis], pl, `${pp}.dispatch.${axis}`, 'the dispatch size');
        for (const [f, e] of Object.entries(p.uniforms ?? {})) fa.chain(e, pl, `${pp}.uniforms.${f}`);
        (p.bindings ?? []).forEach((b, bi) => {
          // Uniform structs are evaluated in the pass's scope (contract-level ones too).
          if (typeof b !== 'string') b.struct?.forEach((f, i) => fa.chain(f.value, pl, `${pp}.bindings[${bi}].struct[${i}].value`));
          else c.bindings?.[b]?.struct?.forEach((f, i) => fa.chain(f.value, pl, `bindings.${b}.struct[${i}].value (in ${pp})`));
        });
        if (p.passes) walk(p.passes, pl, `${pp}.passes`);
      });
    };
    walk(v.passes, vl, `${vp}.passes`);
  });
}
