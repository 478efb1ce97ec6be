/**
 * Evaluates the contracts over device profiles x model configs x step shapes: each model's steps are built on a
 * planning device (op-requests.ts), every request is resolved through its op contract as Program.compile resolves it,
 * and mixture-of-experts configs are evaluated through the QMoE contracts. The result is a list of selections (which
 * contract variant, hence which registry kernels and templates, each (device, model, quant, shape) gets) and of
 * requests no variant accepts; src/registry/reach.ts turns it into the per-variant report.
 */
import { ContractError, ContractInputError, ContractPlanError } from '../contracts/errors.ts';
import { resolveContract, type Plan } from '../contracts/plan.ts';
import type { KernelContract } from '../contracts/types.ts';
import type { DeviceCaps } from '../gpu/caps.ts';
import type { DecoderConfig } from '../models/config.ts';
import { OpRunner, registryLookup, tensorBytes } from '../ops/runner.ts';
import { defaultRegistry } from '../registry/bundled.ts';
import type { ReachEvaluation, ReachUnsupported } from '../registry/reach.ts';
import type { Registry } from '../registry/types.ts';

export type { ReachEvaluation, ReachSelection, ReachUnsupported } from '../registry/reach.ts';
import {
  defaultStepShapes,
  planningDecoder,
  planningDevice,
  PlanningError,
  qmoeRequest,
  REACH_QUANTS,
  REACH_SAMPLING,
  requestKey,
  stepLabel,
  stepRequests,
  type OpRequest,
  type ReachQuant,
  type StepShape,
} from './op-requests.ts';

export interface ReachDevice {
  name: string;
  caps: DeviceCaps;
  /** "measured" or "modelled" (the profile's `provenance`), "unknown" when the file does not say. */
  provenance: string;
  file?: string;
}

export interface ReachModel {
  name: string;
  config: DecoderConfig;
  file?: string;
}

/** A contract besides the op contracts (the QMoE contracts), evaluated for the MoE configs' expert blocks. */
export interface ReachContract {
  /** Short name used in contract variant ids, e.g. "qmoe" or "qmoe.v2". */
  name: string;
  contract: KernelContract;
  source: string;
}

export interface ReachOptions {
  shapes?: StepShape[];
  quants?: readonly ReachQuant[];
  /** The QMoE contracts (or any contract taking QMoE's inputs), evaluated for MoE configs. */
  moeContracts?: ReachContract[];
  /** Token counts of the MoE evaluation (default: the prefill sizes of `shapes`). */
  moeTokens?: number[];
  registry?: Registry;
}

type Resolved = { plan: Plan } | { error: string };

function planParts(p: Plan): { kernels: string[]; templates: string[] } {
  const kernels = new Set<string>();
  const templates = new Set<string>();
  for (const pass of p.passes) {
    if (pass.kernel) kernels.add(pass.kernel);
    else if (pass.shader) templates.add(pass.shader);
  }
  return { kernels: [...kernels], templates: [...templates] };
}

/** No variant accepts the request, or the chosen one cannot be planned (e.g. an intermediate over a device limit). */
const isContractError = (e: unknown) => e instanceof ContractError || e instanceof ContractInputError || e instanceof ContractPlanError;

export function evaluateReach(devices: readonly ReachDevice[], models: readonly ReachModel[], opts: ReachOptions = {}): ReachEvaluation {
  const shapes = opts.shapes ?? defaultStepShapes();
  const quants = opts.quants ?? REACH_QUANTS;
  const maxContext = Math.max(...shapes.map((s) => s.context));
  const registry = opts.registry ?? defaultRegistry();
  const kernels = registryLookup(registry);
  const out: ReachEvaluation = {
    devices: devices.map((d) => ({ name: d.name, provenance: d.provenance, ...(d.file ? { file: d.file } : {}) })),
    models: models.map((m) => ({ name: m.name, architecture: m.config.architecture, ...(m.file ? { file: m.file } : {}), moe: !!m.config.moe })),
    quants: [...quants],
    shapes: shapes.map(stepLabel),
    selections: [],
    unsupported: [],
    requests: {},
  };
  for (const d of devices) {
    const runner = new OpRunner(planningDevice(d.caps), registry);
    const cache = new Map<string, Resolved>();
    const resolve = (r: OpRequest): Resolved => {
      const key = requestKey(r);
      let v = cache.get(key);
      if (!v) {
        try {
          v = { plan: runner.plan(r.op, r.tensors, r.attributes) };
        } catch (e) {
          if (!isContractError(e)) throw e;
          v = { error: (e as Error).message };
        }
        cache.set(key, v);
      }
      return v;
    };
    let requests = 0;
    const maxBinding = d.caps.limits.maxStorageBufferBindingSize ?? Infinity;
    const record = (model: string, quant: string, shape: string, r: OpRequest, res: Resolved, calls: number) => {
      requests++;
      if ('error' in res) {
        out.unsupported.push({ device: d.name, model, quant, shape, op: r.op, reason: res.error });
        return;
      }
      // The contracts check their intermediates against the limits; a caller's tensor bound whole must fit too.
      for (const [k, t] of Object.entries(r.tensors)) {
        const bytes = tensorBytes(t);
        if (bytes > maxBinding) {
          out.unsupported.push({ device: d.name, model, quant, shape, op: r.op, reason: `${r.op}.${res.plan.variant} is selected, but tensor ${k} [${t.shape.join(', ')}] ${t.dtype} (${bytes} bytes) exceeds device.limits.maxStorageBufferBindingSize = ${maxBinding}` });
        }
      }
      out.selections.push({ device: d.name, model, quant, shape, op: r.op, contractVariant: `${r.op}.${res.plan.variant}`, ...planParts(res.plan), calls, dtypes: [...new Set(Object.values(r.tensors).map((t) => t.dtype))] });
    };
    for (const m of models) {
      if (m.config.moe) {
        // The experts as an ONNX export's com.microsoft.QMoE would run them (the decoder's own moe call follows).
        const tokens = opts.moeTokens ?? [...new Set(shapes.filter((s) => s.kind === 'prefill').map((s) => s.tokens))];
        for (const c of opts.moeContracts ?? []) {
          // f16 activations where the device has shader-f16 and the contract's type constraint allows them
          const allowed = c.contract.typeConstraints?.T ?? ['float32'];
          const dtypes = (['float32', 'float16'] as const).filter((t) => allowed.includes(t) && (t === 'float32' || d.caps.features.has('shader-f16')));
          for (const dtype of dtypes) {
            for (const T of tokens) {
              const r = qmoeRequest(m.config, T, dtype)!;
              let res: Resolved;
              try {
                const dtypes = Object.fromEntries(Object.entries(r.tensors).map(([k, t]) => [k, t.dtype]));
                const shp = Object.fromEntries(Object.entries(r.tensors).map(([k, t]) => [k, t.shape]));
                res = { plan: resolveContract(c.contract, { shapes: shp, dtypes, attributes: r.attributes, device: d.caps, kernels, source: c.source }) };
              } catch (e) {
                if (!isContractError(e)) throw e;
                res = { error: (e as Error).message };
              }
              record(m.name, `experts int4 ${dtype === 'float16' ? 'f16' : 'f32'} act`, `experts T=${T}`, { ...r, op: c.name }, res, m.config.numLayers);
            }
          }
        }
      }
      for (const q of quants) {
        // --quant f16 is refused on a device without shader-f16 (effectiveQuant): not a request any kernel gets
        if (q === 'f16' && !d.caps.features.has('shader-f16')) continue;
        let dec;
        try {
          dec = planningDecoder(d.caps, m.config, q, maxContext);
        } catch (e) {
          if (!(e instanceof PlanningError)) throw e;
          out.unsupported.push({ device: d.name, model: m.name, quant: q, reason: e.message });
          continue;
        }
        for (const s of shapes) {
          // Both sampling settings' steps, each distinct request once (the forward is the same; sampling differs).
          const merged = new Map<string, { request: OpRequest; calls: number }>();
          for (const sampling of REACH_SAMPLING) {
            try {
              for (const r of stepRequests(dec, s, sampling)) if (!merged.has(requestKey(r.request))) merged.set(requestKey(r.request), r);
            } catch (e) {
              if (!isContractError(e)) throw e;
              out.unsupported.push({ device: d.name, model: m.name, quant: q, shape: stepLabel(s), reason: (e as Error).message });
            }
          }
          for (const { request, calls } of merged.values()) record(m.name, q, stepLabel(s), request, resolve(request), calls);
        }
      }
    }
    out.requests[d.name] = requests;
  }
  return out;
}
