/**
 * The op layer: one entry per registry operation used by models. Each op is a kernel contract
 * (src/ops/contracts/<op>.contract.json) whose passes name registry kernels; the runner resolves the contract
 * against the real device and the real tensor shapes (plans are cached), then records it with recordContract: the
 * registry's bindings, the packed uniforms, the plan's dispatch sizes. No TypeScript here knows an offset, a
 * binding index, a variant choice or a dispatch formula.
 */
import { opTunables } from '../config.ts';
import { dynamicNames } from '../contracts/plan.ts';
import { ContractError, ContractInputError } from '../contracts/errors.ts';
import { resolveContract, type Plan } from '../contracts/plan.ts';
import { validateContract } from '../contracts/schema.ts';
import { DTYPE_BYTES, type AttributeValue, type KernelContract, type KernelLookup } from '../contracts/types.ts';
import { OP_CONTRACTS } from './contracts.generated.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import type { Recorder } from '../gpu/recorder.ts';
import { recordContract, type GpuTensorRef } from '../contracts/run.ts';
import { defaultRegistry, readWgslSync } from '../registry/bundled.ts';
import { registryLookup as binderLookup } from '../registry/binder.ts';
import type { Registry } from '../registry/types.ts';

/** What a plan depends on: a tensor's contract dtype name and its shape. */
export interface TensorSpec {
  dtype: string;
  shape: readonly number[];
}

/** A GPU tensor: a buffer (or a range of one), its contract dtype name and its shape. */
export interface Tensor extends TensorSpec {
  buffer: GPUBuffer;
  offset?: number;
}

export class OpError extends Error {
  constructor(op: string, detail: string) {
    super(`op ${op}: ${detail}`);
    this.name = 'OpError';
  }
}

/** The registry lookup contracts resolve against, with each kernel's WGSL constants (Node: read from src/kernels). */
export function registryLookup(reg: Registry): KernelLookup {
  return binderLookup(reg, readWgslSync);
}

function elementBytes(dtype: string): number {
  const b = DTYPE_BYTES[dtype];
  if (b === undefined) throw new OpError('(tensor)', `unknown dtype "${dtype}" (known: ${Object.keys(DTYPE_BYTES).join(', ')})`);
  return b;
}

/** Bytes a tensor occupies: its elements, rounded up to 4 bytes (at least 4). */
export function tensorBytes(t: TensorSpec): number {
  return Math.max(4, Math.ceil((t.shape.reduce((a, d) => a * d, 1) * elementBytes(t.dtype)) / 4) * 4);
}

/** The range of `buffer` a tensor is bound as: its own bytes (pooled buffers are larger than the tensors they hold). */
export function tensorRef(buffer: GPUBuffer, t: TensorSpec & { offset?: number }): GpuTensorRef {
  const offset = t.offset ?? 0;
  return { buffer, offset, size: Math.min(tensorBytes(t), buffer.size - offset) };
}

/** Where op contracts come from: by op name, validated (default: the bundled src/ops/contracts, opContract). */
export type ContractSource = (op: string) => KernelContract;

const loaded = new Map<string, KernelContract>();
/** The op contract src/ops/contracts/<name>.contract.json (bundled by src/ops/contracts.generated.ts), validated once. */
export function opContract(name: string): KernelContract {
  let c = loaded.get(name);
  if (!c) {
    if (!Object.hasOwn(OP_CONTRACTS, name)) throw new OpError(name, `no contract src/ops/contracts/${name}.contract.json (known: ${Object.keys(OP_CONTRACTS).join(', ')})`);
    loaded.set(name, (c = validateContract(structuredClone(OP_CONTRACTS[name]), `${name}.contract.json`)));
  }
  return c;
}

export class OpRunner {
  private plans = new Map<string, Plan>();
  private readonly lookup: KernelLookup;
  /** How many contract resolutions missed the plan cache (for profiling). */
  resolutions = 0;

  constructor(
    readonly dev: TesseraDevice,
    readonly registry: Registry = defaultRegistry(),
    private readonly contracts: ContractSource = opContract,
  ) {
    this.lookup = registryLookup(registry);
  }

  contract(op: string): KernelContract {
    return this.contracts(op);
  }

  /**
   * Resolve (cached) the plan of `op` for these tensors and attributes on this device. Plans are keyed on shapes,
   * dtypes and static attributes only: a dynamic attribute (a position, a seed) reaches uniform fields only, so the
   * plan resolved for one value serves every value (recordContract re-writes those fields).
   */
  plan(op: string, tensors: Readonly<Record<string, TensorSpec>>, attributes: Readonly<Record<string, AttributeValue>> = {}): Plan {
    const dyn = dynamicNames(this.contract(op));
    let key = op;
    for (const k in tensors) {
      const t = tensors[k]!;
      key += `|${k}:${t.dtype}:${t.shape.join('x')}`;
    }
    for (const k in attributes) if (!dyn.has(k)) key += `|${k}=${attributes[k]}`;
    // the tunables set for this op (TESSERA_TUNABLES) choose the plan too: a plan made under others is not reused
    const tunables = opTunables(op);
    if (tunables) key += `|${JSON.stringify(tunables)}`;
    let p = this.plans.get(key);
    if (!p) {
      const c = this.contract(op);
      const shapes: Record<string, readonly number[]> = {};
      const dtypes: Record<string, string> = {};
      for (const [k, t] of Object.entries(tensors)) {
        if (!(k in c.inputs || k in c.outputs)) {
          throw new OpError(op, `unknown tensor "${k}" (inputs: ${Object.keys(c.inputs).join(', ')}; outputs: ${Object.keys(c.outputs).join(', ')})`);
        }
        shapes[k] = t.shape;
        dtypes[k] = t.dtype;
      }
      // Resolved with the defaults of dynamic attributes: the plan must not carry one caller's position or seed.
      const stat: Record<string, AttributeValue> = {};
      for (const k in attributes) if (!dyn.has(k)) stat[k] = attributes[k]!;
      p = resolveContract(c, { shapes, dtypes, attributes: stat, ...(tunables ? { tunables } : {}), device: this.dev.caps, kernels: this.lookup, source: `${op}.contract.json` });
      this.resolutions++;
      if (this.plans.size > 4096) this.plans.clear();
      this.plans.set(key, p);
    }
    return p;
  }

  /**
   * Record `op` into `rec`. Tensors are named by the contract's input and output names; outputs must be
   * allocated by the caller with the shapes the contract computes (checked by the resolver when given).
   */
  async record(rec: Recorder, op: string, tensors: Readonly<Record<string, Tensor>>, attributes: Readonly<Record<string, AttributeValue>> = {}): Promise<Plan> {
    const plan = this.plan(op, tensors, attributes);
    const refs: Record<string, GpuTensorRef> = {};
    for (const [k, t] of Object.entries(tensors)) refs[k] = tensorRef(t.buffer, t);
    const dyn = dynamicNames(this.contract(op));
    let dynamic: Record<string, AttributeValue> | undefined;
    for (const k in attributes) if (dyn.has(k)) (dynamic ??= {})[k] = attributes[k]!;
    await recordContract(rec, this.dev, plan, refs, undefined, this.registry, dynamic);
    return plan;
  }
}

const acceptRunners = new WeakMap<TesseraDevice, OpRunner>();
/**
 * Whether `op`'s contract has a variant for these tensors on this device (no error is built). Loaders ask it which
 * weight formats a kernel reads (e.g. `linear` with a q4_k weight of this width) instead of repeating the rule.
 */
export function opAccepts(dev: TesseraDevice, op: string, tensors: Readonly<Record<string, TensorSpec>>, attributes: Readonly<Record<string, AttributeValue>> = {}): boolean {
  return opVariant(dev, op, tensors, attributes) !== undefined;
}

/** The variant `op`'s contract picks for these tensors on this device, or undefined where none accepts them. */
export function opVariant(dev: TesseraDevice, op: string, tensors: Readonly<Record<string, TensorSpec>>, attributes: Readonly<Record<string, AttributeValue>> = {}): string | undefined {
  return opPlan(dev, op, tensors, attributes)?.variant;
}

/** The plan `op`'s contract makes for these tensors on this device (its derived values say what it does), or undefined where none accepts them. */
export function opPlan(dev: TesseraDevice, op: string, tensors: Readonly<Record<string, TensorSpec>>, attributes: Readonly<Record<string, AttributeValue>> = {}): Plan | undefined {
  let r = acceptRunners.get(dev);
  if (!r) acceptRunners.set(dev, (r = new OpRunner(dev)));
  try {
    return r.plan(op, tensors, attributes);
  } catch (e) {
    if (e instanceof ContractError || e instanceof ContractInputError) return undefined;
    throw e;
  }
}
