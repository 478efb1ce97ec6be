/**
 * Variant selection: the highest-priority variant (ties: document order) whose `requires` the device
 * meets and whose `when` conditions all hold. Every variant tried before it is recorded with the reason.
 */
import type { DeviceCaps, SubgroupMatrixConfig } from '../gpu/caps.ts';
import { ExprError, explainFalse, formatExplanation, formatValue, type Scope } from '../expr/index.ts';
import type { Rejection } from './errors.ts';
import type { KernelLookup, PassSpec, VariantSpec } from './types.ts';

export const formatConfig = (c: SubgroupMatrixConfig) => `${c.componentType}->${c.resultComponentType} ${c.M}x${c.N}x${c.K}`;

function kernelNames(passes: readonly PassSpec[], out: string[] = []): string[] {
  for (const p of passes) {
    if (p.kernel) out.push(p.kernel);
    if (p.passes) kernelNames(p.passes, out);
  }
  return out;
}

/** Why the device cannot run the variant, or undefined when it can. */
export function requirementFailure(v: VariantSpec, device: DeviceCaps, kernels?: KernelLookup): Omit<Rejection, 'variant' | 'priority'> | undefined {
  const missing = (v.requires?.features ?? []).filter((f) => !device.features.has(f));
  if (missing.length) {
    return { kind: 'requires', reason: `requires feature${missing.length > 1 ? 's' : ''} ${missing.map((f) => `"${f}"`).join(', ')}, which the device lacks`, refs: [] };
  }
  const have = device.adapterInfo.subgroupMatrixConfigs ?? [];
  for (const want of v.requires?.subgroupMatrixConfigs ?? []) {
    const ok = have.some((h) => h.componentType === want.componentType && h.resultComponentType === want.resultComponentType && h.M === want.M && h.N === want.N && h.K === want.K);
    if (!ok) {
      const offered = have.length ? `the device offers ${have.map(formatConfig).join(', ')}` : 'the device offers none';
      return { kind: 'requires', reason: `requires subgroup-matrix config ${formatConfig(want)} (component->result MxNxK); ${offered}`, refs: [] };
    }
  }
  for (const k of kernelNames(v.passes)) {
    if (!kernels) continue; // resolved (and reported) when the plan is built
    const info = kernels(k);
    if (!info) return { kind: 'error', reason: `names registry kernel "${k}", which the registry does not have`, refs: [] };
    const lacks = (info.requires ?? []).filter((f) => !device.features.has(f));
    if (lacks.length) return { kind: 'requires', reason: `registry kernel ${k} requires ${lacks.map((f) => `"${f}"`).join(', ')}, which the device lacks`, refs: [] };
  }
  return undefined;
}

/** Why a `when` list does not hold in `scope`, or undefined when all conditions are true. */
export function conditionFailure(v: VariantSpec, scope: Scope): Omit<Rejection, 'variant' | 'priority'> | undefined {
  const when = v.when ?? [];
  for (let i = 0; i < when.length; i++) {
    const w = when[i]!;
    const text = typeof w === 'string' ? w : JSON.stringify(w);
    let value: unknown;
    try {
      value = scope.eval(w, `variants.${v.id}.when[${i}]`);
    } catch (e) {
      if (!(e instanceof ExprError)) throw e;
      const ex = explainFalse(w, scope);
      const where = ex && (ex.path.length > 0 || ex.clause !== text) ? `${formatExplanation(ex)}` : e.summary;
      return { kind: 'error', reason: `when "${text}" could not be evaluated: ${where}`, refs: ex?.refs ?? [] };
    }
    if (value === true) continue;
    if (value !== false) return { kind: 'error', reason: `when "${text}" must be true or false, got ${formatValue(value)}`, refs: [] };
    const ex = explainFalse(w, scope);
    if (!ex) return { kind: 'when', reason: `when "${text}" is false`, refs: [] };
    const self = ex.path.length === 0 && ex.clause === text;
    const why = self ? (ex.detail ? ` (${ex.detail})` : '') : `: ${formatExplanation(ex)}`;
    return { kind: ex.error ? 'error' : 'when', reason: `when "${text}" is false${why}`, refs: ex.refs };
  }
  return undefined;
}

/** Variants in selection order: priority descending, then document order. */
export function selectionOrder(variants: readonly VariantSpec[]): VariantSpec[] {
  return variants.map((v, i) => ({ v, i })).sort((a, b) => b.v.priority - a.v.priority || a.i - b.i).map(({ v }) => v);
}

/** Turns the refs of failing clauses into names: `input fc2T`, `attribute k`, most frequent first. */
export function offendingNames(rejected: readonly Rejection[]): string[] {
  const count = new Map<string, number>();
  for (const r of rejected) {
    const names = new Set<string>();
    for (const ref of r.refs) {
      const [ns, key] = ref.split('.');
      if (ns === 'shapes' || ns === 'ranks' || ns === 'tensorDtypes') names.add(`input ${key}`);
      else if (ns === 'attrs') names.add(`attribute ${key}`);
      else if (ns === 'tunables') names.add(`tunable ${key}`);
    }
    for (const n of names) count.set(n, (count.get(n) ?? 0) + 1);
  }
  return [...count].sort((a, b) => b[1] - a[1]).map(([n]) => n);
}
