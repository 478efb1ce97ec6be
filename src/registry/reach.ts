/**
 * The computed reachability audit: from an evaluation of the contracts over devices x models x shapes (which
 * contract variant, and so which registry kernels, each request selects; src/runtime/reach-eval.ts), the report per
 * registry variant (which device, model, quant and shape select it; which contract variants name it) and per contract
 * variant, compared with the registry's copied `reachability` records. A record and the evaluation disagree when one
 * says a model reaches the variant and the other does not: the registry's `pinned` and `model-selectable` claim that
 * model configs reach it; the evaluation claims it when some (device, model, shape) selects it.
 */
import type { KernelContract, PassSpec } from '../contracts/types.ts';
import type { Registry } from './types.ts';

/** What one (device, model, quant, shape) request resolved to. */
export interface ReachSelection {
  device: string;
  model: string;
  quant: string;
  shape: string;
  op: string;
  /** `contract.variant`, e.g. "linear.q4k_gemv_sg" */
  contractVariant: string;
  /** Registry kernels the plan's passes name (`operation.variant`). */
  kernels: string[];
  /** `.wgsl.jinja` templates the plan's passes render. */
  templates: string[];
  /** Calls of the step that make this request (layers). */
  calls: number;
  /** The dtypes of the request's tensors. */
  dtypes: string[];
}

/** A request (or a whole model on a device) no contract variant accepts. */
export interface ReachUnsupported {
  device: string;
  model: string;
  quant: string;
  shape?: string;
  op?: string;
  reason: string;
}

export interface ReachEvaluation {
  devices: { name: string; provenance: string; file?: string }[];
  models: { name: string; architecture: string; file?: string; moe: boolean }[];
  quants: string[];
  shapes: string[];
  selections: ReachSelection[];
  unsupported: ReachUnsupported[];
  /** Requests evaluated per device (each distinct request of a step once). */
  requests: Record<string, number>;
}

/** The status a registry record claims, and whether it claims that model configs reach the variant. */
export const MODEL_REACHED_STATUSES: ReadonlySet<string> = new Set(['pinned', 'model-selectable']);

export interface SelectedBy {
  device: string;
  model: string;
  quant: string;
  shapes: string[];
  contractVariants: string[];
}

export interface VariantReach {
  id: string;
  operation: string;
  /** The registry record's status (pinned, model-selectable, selectable, unused). */
  registryStatus: string;
  /** Model configs the record says pin the variant. */
  registryConfigs: number;
  /** Contract variants whose passes name this kernel. */
  namedBy: string[];
  selected: boolean;
  devices: string[];
  models: string[];
  selectedBy: SelectedBy[];
}

export interface ContractVariantReach {
  id: string;
  contract: string;
  kernels: string[];
  templates: string[];
  /** Devices on which some model request selects it. */
  devices: string[];
  models: string[];
  shapes: string[];
}

export interface Disagreement {
  variant: string;
  registryStatus: string;
  detail: string;
}

export interface DeviceSummary {
  device: string;
  provenance: string;
  requests: number;
  unsupported: number;
  registryVariants: number;
  contractVariants: number;
}

export interface ReachReport {
  devices: ReachEvaluation['devices'];
  models: ReachEvaluation['models'];
  quants: string[];
  shapes: string[];
  summary: {
    perDevice: DeviceSummary[];
    registryVariants: number;
    registryVariantsSelected: number;
    contractVariants: number;
    contractVariantsSelected: number;
    unsupportedRequests: number;
    disagreements: { evaluationOnly: number; registryOnly: number };
  };
  variants: VariantReach[];
  contractVariants: ContractVariantReach[];
  /** Requests no variant accepts, one entry per (device, model, quant, op, reason) with the shapes. */
  unsupported: (Omit<ReachUnsupported, 'shape'> & { shapes: string[] })[];
  disagreements: {
    /** Selected by some (device, model, shape), but the registry says no model config reaches it. */
    evaluationOnly: Disagreement[];
    /** The registry says model configs reach it (pinned / model-selectable), but nothing evaluated selects it. */
    registryOnly: Disagreement[];
  };
}

/** The registry kernels and templates each variant of a contract names (nested passes included). */
export function contractKernels(c: KernelContract): Map<string, { kernels: string[]; templates: string[] }> {
  const out = new Map<string, { kernels: string[]; templates: string[] }>();
  const walk = (ps: readonly PassSpec[], k: Set<string>, t: Set<string>) => {
    for (const p of ps) {
      if (p.passes) walk(p.passes, k, t);
      if (p.kernel) k.add(p.kernel);
      else if (p.shader) t.add(p.shader);
    }
  };
  for (const v of c.variants) {
    const k = new Set<string>();
    const t = new Set<string>();
    walk(v.passes, k, t);
    out.set(v.id, { kernels: [...k], templates: [...t] });
  }
  return out;
}

const uniq = <T>(xs: Iterable<T>): T[] => [...new Set(xs)];

/**
 * The report. `contracts` are every contract evaluated (op contracts by op name, and the QMoE contracts), so a
 * variant that no request selects still shows which contract variants name it; `hasWgsl` (optional) explains a
 * registry-only disagreement by a missing WGSL entry point.
 */
export function reachReport(ev: ReachEvaluation, registry: Registry, contracts: readonly { name: string; contract: KernelContract }[], hasWgsl?: (variantId: string) => boolean): ReachReport {
  const cvs = new Map<string, ContractVariantReach>();
  const namedBy = new Map<string, string[]>();
  for (const { name, contract } of contracts) {
    for (const [id, parts] of contractKernels(contract)) {
      const cv = `${name}.${id}`;
      cvs.set(cv, { id: cv, contract: name, ...parts, devices: [], models: [], shapes: [] });
      for (const k of parts.kernels) namedBy.set(k, [...(namedBy.get(k) ?? []), cv]);
    }
  }
  // kernel -> "device|model|quant" -> { shapes, contract variants }
  const byKernel = new Map<string, Map<string, SelectedBy>>();
  for (const s of ev.selections) {
    const cv = cvs.get(s.contractVariant);
    if (cv) {
      cv.devices.push(s.device);
      cv.models.push(s.model);
      cv.shapes.push(s.shape);
    } else {
      cvs.set(s.contractVariant, { id: s.contractVariant, contract: s.op, kernels: s.kernels, templates: s.templates, devices: [s.device], models: [s.model], shapes: [s.shape] });
    }
    for (const k of s.kernels) {
      let m = byKernel.get(k);
      if (!m) byKernel.set(k, (m = new Map()));
      const key = `${s.device}|${s.model}|${s.quant}`;
      let e = m.get(key);
      if (!e) m.set(key, (e = { device: s.device, model: s.model, quant: s.quant, shapes: [], contractVariants: [] }));
      if (!e.shapes.includes(s.shape)) e.shapes.push(s.shape);
      if (!e.contractVariants.includes(s.contractVariant)) e.contractVariants.push(s.contractVariant);
    }
  }
  for (const cv of cvs.values()) {
    cv.devices = uniq(cv.devices);
    cv.models = uniq(cv.models);
    cv.shapes = uniq(cv.shapes);
  }
  const variants: VariantReach[] = [];
  const evaluationOnly: Disagreement[] = [];
  const registryOnly: Disagreement[] = [];
  for (const op of registry.operations.values()) {
    for (const v of op.variants.values()) {
      const sel = [...(byKernel.get(v.id)?.values() ?? [])];
      const r: VariantReach = {
        id: v.id,
        operation: op.name,
        registryStatus: v.reachability.status,
        registryConfigs: v.reachability.inlineConfigs.length,
        namedBy: namedBy.get(v.id) ?? [],
        selected: sel.length > 0,
        devices: uniq(sel.map((s) => s.device)),
        models: uniq(sel.map((s) => s.model)),
        selectedBy: sel,
      };
      variants.push(r);
      const claims = MODEL_REACHED_STATUSES.has(r.registryStatus);
      if (r.selected && !claims) {
        const cv = uniq(sel.flatMap((s) => s.contractVariants));
        evaluationOnly.push({
          variant: v.id,
          registryStatus: r.registryStatus,
          detail: `registry says ${r.registryStatus}; selected through ${cv.join(', ')} on ${r.devices.join(', ')} by ${r.models.join(', ')}`,
        });
      } else if (!r.selected && claims) {
        const why =
          hasWgsl && !hasWgsl(v.id)
            ? `no WGSL (${v.wgsl} ${v.entryPoint})${r.namedBy.length ? `; named by ${r.namedBy.join(', ')}` : ''}`
            : r.namedBy.length
              ? `named by ${r.namedBy.join(', ')}, but no evaluated device x model x shape selects it`
              : 'WGSL exists, but no contract variant names it';
        registryOnly.push({ variant: v.id, registryStatus: r.registryStatus, detail: `registry says ${r.registryStatus} (${r.registryConfigs} pinning configs); ${why}` });
      }
    }
  }
  const unsupported = new Map<string, ReachReport['unsupported'][number]>();
  for (const u of ev.unsupported) {
    const key = `${u.device}|${u.model}|${u.quant}|${u.op ?? ''}|${u.reason}`;
    let e = unsupported.get(key);
    if (!e) unsupported.set(key, (e = { device: u.device, model: u.model, quant: u.quant, ...(u.op ? { op: u.op } : {}), reason: u.reason, shapes: [] }));
    if (u.shape && !e.shapes.includes(u.shape)) e.shapes.push(u.shape);
  }
  const perDevice = ev.devices.map((d) => {
    const sel = ev.selections.filter((s) => s.device === d.name);
    return {
      device: d.name,
      provenance: d.provenance,
      requests: ev.requests[d.name] ?? 0,
      unsupported: ev.unsupported.filter((u) => u.device === d.name).length,
      registryVariants: new Set(sel.flatMap((s) => s.kernels)).size,
      contractVariants: new Set(sel.map((s) => s.contractVariant)).size,
    };
  });
  const contractVariants = [...cvs.values()].sort((a, b) => a.id.localeCompare(b.id));
  return {
    devices: ev.devices,
    models: ev.models,
    quants: ev.quants,
    shapes: ev.shapes,
    summary: {
      perDevice,
      registryVariants: variants.length,
      registryVariantsSelected: variants.filter((v) => v.selected).length,
      contractVariants: contractVariants.length,
      contractVariantsSelected: contractVariants.filter((c) => c.devices.length > 0).length,
      unsupportedRequests: ev.unsupported.length,
      disagreements: { evaluationOnly: evaluationOnly.length, registryOnly: registryOnly.length },
    },
    variants,
    contractVariants,
    unsupported: [...unsupported.values()],
    disagreements: { evaluationOnly, registryOnly },
  };
}
