/**
 * Template contexts for rendering a pass's `.wgsl.jinja` shader: every derived value (contract,
 * variant, enclosing repeat groups and the pass), plus the namespaces attrs, tunables, shapes, ranks,
 * dtypes and repeat, plus the pass's bindings: `bindings` in order, and `binding` by WGSL name, each with
 * its group-0 `index` (position in the pass's list), its WGSL access mode (`read` / `read_write`) and, for
 * uniform structs, the fields in packing order (so the WGSL struct is generated from the packer's list).
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
  bindings: TemplateBinding[];
  binding: Record<string, TemplateBinding>;
}

export interface TemplateBinding {
  name: string;
  kind: string;
  index: number;
  /** Storage bindings: the contract's access ('storage' | 'read-only-storage') and the WGSL spelling. */
  access?: string;
  wgslAccess?: 'read' | 'read_write';
  elementType?: string;
  /** Tensor bindings of an absent optional input. */
  absent?: boolean;
  fields?: { name: string; type: string }[];
}

export function templateContext(plan: Plan, pass: PlanPass): TemplateContext {
  const bindings: TemplateBinding[] = pass.bindings.map((b, i) =>
    b.kind === 'uniform'
      ? { name: b.name, kind: b.kind, index: b.index ?? i, fields: b.fields.map((f) => ({ name: f.name, type: f.type })) }
      : {
          name: b.name,
          kind: b.kind,
          index: b.index ?? i,
          access: b.access,
          wgslAccess: b.access === 'read-only-storage' ? 'read' : 'read_write',
          ...(b.elementType ? { elementType: b.elementType } : {}),
          ...(b.kind === 'tensor' && b.absent ? { absent: true } : {}),
        },
  );
  return {
    ...plan.derived,
    ...pass.derived,
    // Dynamic attributes change per call: a shader must not bake them in.
    attrs: Object.fromEntries(Object.entries(plan.attrs).filter(([k]) => !(k in plan.dynamic))),
    tunables: plan.tunables,
    shapes: plan.shapes,
    ranks: plan.ranks,
    dtypes: plan.dtypes,
    repeat: pass.repeat,
    variant: plan.variant,
    pass: { id: pass.id, path: pass.path, name: pass.name, ...(pass.shader ? { shader: pass.shader } : {}), ...(pass.kernel ? { kernel: pass.kernel } : {}) },
    bindings,
    binding: Object.fromEntries(bindings.map((b) => [b.name, b])),
  };
}

/** The distinct shaders of a plan with one context each (the first pass that uses the shader). */
export function shaderContexts(plan: Plan): Map<string, TemplateContext> {
  const out = new Map<string, TemplateContext>();
  for (const p of plan.passes) if (p.shader && !out.has(p.shader)) out.set(p.shader, templateContext(plan, p));
  return out;
}
