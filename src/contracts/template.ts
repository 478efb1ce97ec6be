/**
 * Template contexts for rendering a pass's `.wgsl.jinja` shader: every derived value (contract,
 * variant, enclosing repeat groups and the pass), plus the namespaces attrs, tunables, shapes, ranks,
 * dtypes and repeat, plus the pass's bindings by WGSL name (uniform structs with their fields).
 */
import type { Plan, PlanPass } from './plan.ts';

export interface TemplateContext extends Record<string, unknown> {
  attrs: Plan['attrs'];
  tunables: Plan['tunables'];
  shapes: Plan['shapes'];
  ranks: Plan['ranks'];
  dtypes: Plan['dtypes'];
  repeat: Record<string, number>;
  variant: string;
  pass: { id: string; path: string; name: string; shader?: string; kernel?: string };
  bindings: { name: string; kind: string; access?: string; elementType?: string; fields?: { name: string; type: string }[] }[];
}

export function templateContext(plan: Plan, pass: PlanPass): TemplateContext {
  return {
    ...plan.derived,
    ...pass.derived,
    attrs: plan.attrs,
    tunables: plan.tunables,
    shapes: plan.shapes,
    ranks: plan.ranks,
    dtypes: plan.dtypes,
    repeat: pass.repeat,
    variant: plan.variant,
    pass: { id: pass.id, path: pass.path, name: pass.name, ...(pass.shader ? { shader: pass.shader } : {}), ...(pass.kernel ? { kernel: pass.kernel } : {}) },
    bindings: pass.bindings.map((b) =>
      b.kind === 'uniform'
        ? { name: b.name, kind: b.kind, fields: b.fields.map((f) => ({ name: f.name, type: f.type })) }
        : { name: b.name, kind: b.kind, access: b.access, ...(b.elementType ? { elementType: b.elementType } : {}) },
    ),
  };
}

/** The distinct shaders of a plan with one context each (the first pass that uses the shader). */
export function shaderContexts(plan: Plan): Map<string, TemplateContext> {
  const out = new Map<string, TemplateContext>();
  for (const p of plan.passes) if (p.shader && !out.has(p.shader)) out.set(p.shader, templateContext(plan, p));
  return out;
}
