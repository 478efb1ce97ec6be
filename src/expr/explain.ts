import { walk, type Node } from './ast.ts';
import { ExprError } from './errors.ts';
import { evaluateNode } from './evaluate.ts';
import { compile } from './parser.ts';
import type { ExprSource, Scope } from './scope.ts';
import { formatValue } from './values.ts';

/** Why a boolean expression is false: the derived names followed and the innermost false clause. */
export interface FalseExplanation {
  /** Derived names followed from the top, e.g. ["quantContract", "quantShapeOk"]. */
  path: string[];
  /** Source text of the innermost false clause. */
  clause: string;
  /** Operand values and referenced values, e.g. `1440 vs 2880; shapes.fc2T = [32,2880,720]`. */
  detail: string;
  /** Namespaced references reached from the clause (directly or through derived names): `shapes.fc2T`, `attrs.k`, ... */
  refs: string[];
  /** Set when evaluating the clause threw instead of giving false. */
  error?: ExprError;
}

const NAMESPACES = new Set(['shapes', 'ranks', 'tensorDtypes', 'attrs', 'tunables', 'device', 'repeat']);

/**
 * Explains why `source` is false in `scope`: descends into the first false operand of `and`, into the
 * taken branch of a conditional, and into derived names, down to a leaf clause whose values it shows.
 * Also explains an expression that throws (down to the clause that throws). Returns undefined when
 * the expression evaluates to anything but false without throwing.
 */
export function explainFalse(source: ExprSource, scope: Scope): FalseExplanation | undefined {
  if (typeof source !== 'string') return source === false ? { path: [], clause: String(source), detail: 'literal false', refs: [] } : undefined;
  const c = compile(source);
  return explainNode(c.text, c.ast, scope, [], 0, undefined);
}

function tryEval(text: string, node: Node, scope: Scope): { value?: unknown; error?: unknown } {
  try {
    return { value: evaluateNode(text, node, scope) };
  } catch (error) {
    return { error };
  }
}

function explainNode(text: string, node: Node, scope: Scope, path: string[], depth: number, ctx: string | undefined): FalseExplanation | undefined {
  const r = tryEval(text, node, scope);
  if (r.error === undefined && r.value !== false) return undefined;
  // False or throwing: descend to the clause responsible.
  if (depth < 32) {
    if (node.type === 'binary' && node.op === 'and') {
      return explainNode(text, node.left, scope, path, depth + 1, ctx) ?? explainNode(text, node.right, scope, path, depth + 1, ctx);
    }
    if (node.type === 'cond') {
      const t = tryEval(text, node.test, scope);
      if (t.error !== undefined) return explainNode(text, node.test, scope, path, depth + 1, ctx);
      return explainNode(text, t.value === true ? node.then : node.else, scope, path, depth + 1, ctx);
    }
    if (node.type === 'name') {
      const def = scope.definition(node.name);
      if (def?.compiled) return explainNode(def.compiled.text, def.compiled.ast, def.scope, [...path, node.name], depth + 1, `${def.scope.label}.${node.name}`);
    }
  }
  const clause = text.slice(node.pos, node.end);
  if (r.error !== undefined) {
    const err = r.error instanceof ExprError ? r.error : undefined;
    if (err && ctx) err.withContext(ctx);
    return { path, clause, detail: err ? err.summary : String(r.error), refs: refsOf(node, scope), ...(err ? { error: err } : {}) };
  }
  return { path, clause, detail: leafDetail(text, node, scope), refs: refsOf(node, scope) };
}

function leafDetail(text: string, node: Node, scope: Scope): string {
  const parts: string[] = [];
  if (node.type === 'binary' && node.op !== 'and' && node.op !== 'or') {
    const l = tryEval(text, node.left, scope);
    const r = tryEval(text, node.right, scope);
    if (node.left.type !== 'num' || node.right.type !== 'num') parts.push(`${formatValue(l.value)} ${node.op} ${formatValue(r.value)} is false`);
  }
  const shown: string[] = [];
  for (const { label, node: ref } of directRefs(node)) {
    const v = tryEval(text, ref, scope);
    if (v.error === undefined) shown.push(`${label} = ${formatValue(v.value)}`);
  }
  if (shown.length) parts.push(shown.join(', '));
  return parts.join('; ');
}

/** Names and namespaced member chains directly in `node` (not callees), e.g. `packSize`, `shapes.fc2T`. */
function directRefs(node: Node): { label: string; node: Node }[] {
  const out = new Map<string, Node>();
  const callees = new Set<Node>();
  walk(node, (n) => {
    if (n.type === 'call') callees.add(n.callee);
  });
  walk(node, (n) => {
    if (callees.has(n)) return;
    if (n.type === 'member' && n.object.type === 'name' && NAMESPACES.has(n.object.name)) {
      out.set(`${n.object.name}.${n.property}`, n);
    } else if (n.type === 'member' && n.object.type === 'member' && n.object.object.type === 'name' && n.object.object.name === 'device') {
      out.set(`device.${n.object.property}.${n.property}`, n);
    } else if (n.type === 'name' && !NAMESPACES.has(n.name)) {
      out.set(n.name, n);
    }
  });
  return [...out].map(([label, n]) => ({ label, node: n }));
}

/** Namespaced references reachable from `node`, following derived names transitively. */
export function refsOf(node: Node, scope: Scope): string[] {
  const out = new Set<string>();
  const seen = new Set<string>();
  const visit = (n: Node, s: Scope) => {
    for (const { label } of directRefs(n)) {
      if (label.includes('.')) {
        out.add(label);
        continue;
      }
      if (seen.has(label)) continue;
      seen.add(label);
      const def = s.definition(label);
      if (def?.compiled) visit(def.compiled.ast, def.scope);
    }
  };
  visit(node, scope);
  return [...out];
}

/** One line: `quantContract -> quantShapeOk -> "dim(shapes.fc2T, 2) * packSize == interSize" is false (1440 == 2880 is false; ...)`. */
export function formatExplanation(e: FalseExplanation): string {
  const via = e.path.length ? `${e.path.join(' -> ')} -> ` : '';
  if (e.error) return `${via}"${e.clause}" could not be evaluated: ${e.detail}`;
  return `${via}"${e.clause}" is false${e.detail ? ` (${e.detail})` : ''}`;
}
