/**
 * Launching registry kernels the way the models do: through an op contract (src/ops/contracts) resolved for
 * concrete shapes on this device, recorded by recordContract into a Recorder. The op-test harness, `tessera
 * selftest` and the kernel tests use these helpers; a test that pins a registry kernel asks the resolver for the
 * contract variant whose pass names it (`variant`), and never binds a kernel, packs a uniform or sizes a dispatch
 * itself. Buffers are the caller's (guard regions after outputs, pre-filled caches), bound whole.
 */
import { ContractError, ContractInputError, resolveContract, selectionOrder, type AttributeValue, type KernelContract, type Plan, type PlanPass, type TunableValue, type VariantSpec } from '../contracts/index.ts';
import { recordContract } from '../contracts/run.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import { Recorder, type KernelTime } from '../gpu/recorder.ts';
import { opContract } from '../ops/runner.ts';
import { registryLookup } from '../registry/binder.ts';
import { defaultRegistry, readWgslSync } from '../registry/bundled.ts';
import type { Registry } from '../registry/types.ts';

export type Dispatch3 = [number, number, number];

export { opContract };

export interface PlanRequest {
  shapes: Readonly<Record<string, readonly number[]>>;
  dtypes?: Readonly<Record<string, string>>;
  attributes?: Readonly<Record<string, AttributeValue>>;
  tunables?: Readonly<Record<string, TunableValue>>;
  /** Pin this contract variant (default: the resolver's choice for this device). */
  variant?: string;
  /** Registry the kernels resolve against and compile from (default: the shipped one; tests pass views). */
  registry?: Registry;
}

/** Resolve op contract `name` for these inputs on `dev`. */
export function planOp(dev: TesseraDevice, name: string, req: PlanRequest): Plan {
  return resolveContract(opContract(name), {
    shapes: req.shapes,
    ...(req.dtypes ? { dtypes: req.dtypes } : {}),
    ...(req.attributes ? { attributes: req.attributes } : {}),
    ...(req.tunables ? { tunables: req.tunables } : {}),
    ...(req.variant ? { variant: req.variant } : {}),
    device: dev.caps,
    kernels: registryLookup(req.registry ?? defaultRegistry(), readWgslSync),
    source: `${name}.contract.json`,
  });
}

/** Variants of `c` with one pass that names registry kernel `kernel`, in selection order (priority, then file order). */
export function variantsRunning(c: KernelContract, kernel: string): VariantSpec[] {
  return selectionOrder(c.variants).filter((v) => v.passes.length === 1 && !v.passes[0]!.passes && v.passes[0]!.kernel === kernel);
}

/** Why `req` cannot go to contract `c` at all (an attribute or tunable it does not declare), or undefined. */
function undeclared(c: KernelContract, req: PlanRequest): string | undefined {
  const a = Object.keys(req.attributes ?? {}).find((k) => !(k in (c.attributes ?? {})));
  if (a) return `no attribute ${a}`;
  const t = Object.keys(req.tunables ?? {}).find((k) => !(k in (c.tunables ?? {})));
  return t ? `no tunable ${t}` : undefined;
}

/**
 * The plan that runs registry kernel `kernel` for this request: the first of `names` (op contracts, most specific
 * first: the model's contract, then the kernel's general form) that declares the request's attributes and has a
 * single-pass variant naming the kernel whose `when` holds. Returns the reasons when none does.
 */
export function planForKernel(dev: TesseraDevice, names: readonly string[], kernel: string, req: PlanRequest): { plan: Plan } | { reasons: string[] } {
  const reasons: string[] = [];
  for (const name of names) {
    const c = opContract(name);
    const vs = variantsRunning(c, kernel);
    if (!vs.length) continue;
    const skip = undeclared(c, req);
    if (skip) {
      reasons.push(`${name}: ${skip}`);
      continue;
    }
    for (const v of vs) {
      try {
        return { plan: planOp(dev, name, { ...req, variant: v.id }) };
      } catch (e) {
        if (!(e instanceof ContractError)) throw e;
        reasons.push(`${name}.${v.id}: ${e.rejected.map((r) => r.reason).join('; ')}`);
      }
    }
  }
  if (!reasons.length) reasons.push(`no variant of ${names.join(', ')} names ${kernel}`);
  return { reasons };
}

export interface RecordOptions {
  registry?: Registry;
  /** Values of the contract's dynamic attributes for this recording (default: the plan's). */
  dynamic?: Readonly<Record<string, AttributeValue>>;
  /** Record only the passes whose id passes (e.g. the last pass of a chain whose state is already computed). */
  passes?: (id: string) => boolean;
  /** Replace the dispatch size of every pass, or of the passes named (tests: any grid must work, too-small grids). */
  dispatch?: Dispatch3 | Readonly<Record<string, Dispatch3>>;
}

const derived = new WeakMap<Plan, Map<string, Plan>>();

/** `plan` with passes filtered and dispatch sizes replaced (cached per plan, so pipelines stay prepared). */
function adjusted(plan: Plan, opts: RecordOptions): Plan {
  if (!opts.passes && !opts.dispatch) return plan;
  const ids = plan.passes.map((p) => p.id).filter((id) => !opts.passes || opts.passes(id));
  const key = `${ids.join(',')}|${JSON.stringify(opts.dispatch ?? null)}`;
  let byKey = derived.get(plan);
  if (!byKey) derived.set(plan, (byKey = new Map()));
  let p = byKey.get(key);
  if (!p) {
    const grid = (pass: PlanPass): Dispatch3 => {
      const d = opts.dispatch;
      if (!d) return pass.dispatch;
      if (Array.isArray(d)) return [...(d as Dispatch3)];
      return (d as Record<string, Dispatch3>)[pass.id] ?? pass.dispatch;
    };
    p = { ...plan, passes: plan.passes.filter((pass) => ids.includes(pass.id)).map((pass) => ({ ...pass, dispatch: grid(pass) })) };
    byKey.set(key, p);
  }
  return p;
}

/** Record `plan` with the caller's buffers (by contract tensor name, bound whole). */
export async function recordPlan(rec: Recorder, dev: TesseraDevice, plan: Plan, buffers: Readonly<Record<string, GPUBuffer>>, opts: RecordOptions = {}): Promise<void> {
  const p = adjusted(plan, opts);
  const tensors = Object.fromEntries(Object.entries(buffers).map(([k, buffer]) => [k, { buffer }]));
  for (const pass of p.passes) {
    for (const b of pass.bindings) {
      if (b.kind === 'tensor' && !b.absent && !buffers[b.tensor]) throw new ContractInputError(plan.contract, `tensor ${b.tensor}`, `pass ${pass.path} binds "${b.key}" to it; give a buffer for it`);
    }
  }
  await recordContract(rec, dev, p, tensors, undefined, opts.registry, opts.dynamic);
}

/** Record `plan` into a fresh recorder and submit it; returns the GPU times (empty without timestamps). */
export async function runPlan(dev: TesseraDevice, plan: Plan, buffers: Readonly<Record<string, GPUBuffer>>, opts: RecordOptions = {}): Promise<KernelTime[]> {
  const rec = new Recorder(dev);
  await recordPlan(rec, dev, plan, buffers, opts);
  return rec.submit({ wait: true });
}
