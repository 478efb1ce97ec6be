/**
 * A compiled step. Every op call's contract is resolved once (plans keyed on shapes, dtypes and static
 * attributes); each pass gets its pipeline, its bind group, its workgroup counts and a slot for its uniform struct in
 * one arena. A patch table says which uniform fields read dynamic attributes and from which step variables. Running
 * a step writes those fields (one writeBuffer of the arena's dynamic prefix) and appends the frozen dispatch list to
 * a recorder: no contract, plan cache, bind group cache or uniform packer is touched per step.
 */
import { checkDynamicValue, dynamicNames, uniformBytes, writeDynamicFields, type AttributeValue, type Plan } from '../contracts/index.ts';
import { planDispatches, prepareContract, type GpuTensorRef, type UniformBinding } from '../contracts/run.ts';
import { STORAGE_USAGE, writeBuffer } from '../gpu/buffers.ts';
import { dispatchStep, type CommandList, type Recorder, type Step } from '../gpu/recorder.ts';
import { UniformArena } from '../gpu/uniform-arena.ts';
import { tensorRef, type OpRunner } from '../ops/runner.ts';
import { planActivations } from './liveness.ts';
import { ChainLinkError, chainsCanWait, linkCalls, type ChainCall } from './chain.ts';
import { isDyn, varValue, type Dyn, type OpCall, type StepBuilder, type StepVars } from './step.ts';

export class ProgramError extends Error {
  override name = 'ProgramError';
  constructor(program: string, detail: string) {
    super(`program ${program}: ${detail}`);
  }
}

/** One uniform struct whose fields depend on step variables. */
interface Patch {
  plan: Plan;
  binding: UniformBinding;
  base: number;
  /** Dynamic attributes of the call: a step variable or a constant, with the plan's bounds. */
  inputs: { name: string; value: Dyn | number; bounds: { min?: number; max?: number } }[];
  values: Record<string, number>;
}

export interface ProgramStats {
  dispatches: number;
  /** Compute passes one run encodes to (copies would split them). */
  passes: number;
  /** Uniform structs rewritten per run, and the bytes uploaded for them. */
  patchedStructs: number;
  patchedBytes: number;
  /** GPU memory the program owns: activations (shared by liveness), intermediates, uniforms. */
  activationBytes: number;
  uniformBytes: number;
  /** Distinct op calls, contracts resolved at compile time. */
  calls: number;
  /** Dispatches the step's linked runs of calls saved (StepBuilder.link; src/program/chain.ts). */
  linkedDispatchesSaved: number;
  /** Linked runs left as separate dispatches, and why. */
  linkRefused: string[];
}


export class Program implements CommandList {
  readonly steps: readonly Step[];
  /** Whether a run has been submitted with validation (the first run of a program should be). */
  validated = false;

  private constructor(
    readonly label: string,
    steps: Step[],
    private readonly arena: UniformArena,
    private readonly patches: Patch[],
    private readonly dynamicEnd: number,
    private readonly owned: GPUBuffer[],
    private readonly release: (b: GPUBuffer) => void,
    readonly stats: ProgramStats,
  ) {
    this.steps = steps;
  }

  /** Resolves, prepares and binds every call of `step` (activations and intermediates planned by liveness). */
  static async compile(ops: OpRunner, step: StepBuilder, label: string): Promise<Program> {
    const dev = ops.dev;
    const fail = (detail: string): never => {
      throw new ProgramError(label, detail);
    };
    // 1. Plans (static attributes only; dynamic ones are patched).
    const plans = step.calls.map((c, i) => {
      const dyn = dynamicNames(ops.contract(c.op));
      const stat: Record<string, AttributeValue> = {};
      for (const [k, v] of Object.entries(c.attrs)) {
        if (isDyn(v) && !dyn.has(k)) fail(`call ${i} (${c.op}): attribute ${k} is given a per-step value, but the ${c.op} contract does not declare it dynamic (dynamic: ${[...dyn].join(', ') || 'none'})`);
        if (!dyn.has(k)) stat[k] = v as AttributeValue;
      }
      return ops.plan(c.op, c.tensors, stat);
    });
    // 2. Memory: activations and every call's intermediates share buffers by liveness.
    const acts = step.acts.map((a) => ({ ...a }));
    // a linked run is one dispatch: what any of its calls uses lives across the whole run (one dispatch may not bind
    // a buffer read-only in one call and writable in another, as reusing a dead input's buffer for an output would)
    for (const [first, last] of step.links) {
      for (const a of acts) {
        if (a.first < 0 || a.last < first || a.first > last) continue;
        a.first = Math.min(a.first, first);
        a.last = Math.max(a.last, last);
      }
    }
    const scratchAct = plans.map((p, i) => p.intermediates.map((m) => (acts.push({ label: `${p.contract}.${m.id}`, bytes: Math.max(16, m.bytes), first: i, last: i }), acts.length - 1)));
    const live = planActivations(acts);
    const owned = live.sizes.map((bytes, b) => dev.buffers.acquire(bytes, STORAGE_USAGE, `${label}.act${b}`));
    const actBuffer = (id: number) => owned[live.slot[id]!]!;
    // 3. Uniform slots: dynamic structs first (uploaded every run), identical static structs shared.
    type Req = { key: string; data: ArrayBuffer; patch?: Omit<Patch, 'base'> };
    const reqs: Req[][][] = [];
    // One at a time: pipeline compilation pushes and pops a validation error scope around each await, so concurrent
    // compiles would pop each other's scopes (and compile a shared plan twice).
    const prepared: Awaited<ReturnType<typeof prepareContract>>[] = [];
    for (const p of plans) prepared.push(await prepareContract(dev, p, undefined, ops.registry));
    plans.forEach((plan, i) => {
      const call = step.calls[i]!;
      const dynIn = Object.entries(call.attrs).filter(([k]) => k in plan.dynamic);
      const constVals = Object.fromEntries(dynIn.filter(([, v]) => !isDyn(v)));
      for (const [k, v] of Object.entries(constVals)) checkDynamicValue(plan.contract, k, plan.dynamic[k]!, v);
      const perStep = dynIn.some(([, v]) => isDyn(v));
      reqs.push(
        prepared[i]!.map(({ pass }) =>
          pass.bindings
            .filter((b): b is UniformBinding => b.kind === 'uniform')
            .map((b) => {
              const data = uniformBytes(plan, b, dynIn.length ? constVals : undefined);
              if (!perStep || !b.dynamic) return { key: `s:${hex(data)}`, data };
              const inputs = dynIn.map(([name, value]) => ({ name, value: value as Dyn | number, bounds: plan.dynamic[name]! }));
              const key = `d:${plan.contract}|${plan.variant}|${pass.path}|${b.key}|${hex(data)}|${JSON.stringify(inputs.map((x) => [x.name, x.value]))}|${plans.indexOf(plan)}`;
              return { key, data, patch: { plan, binding: b, inputs, values: {} } };
            }),
        ),
      );
    });
    const slotOf = new Map<string, number>();
    const slotData: Req[] = [];
    for (const dynamicPass of [true, false]) {
      for (const r of reqs.flat(2)) {
        if (!!r.patch !== dynamicPass || slotOf.has(r.key)) continue;
        slotOf.set(r.key, slotData.length);
        slotData.push(r);
      }
    }
    const { arena, offsets } = UniformArena.layout(dev, slotData.map((r) => r.data.byteLength), `${label}.uniforms`);
    const patches: Patch[] = [];
    slotData.forEach((r, k) => {
      arena.set(offsets[k]!, r.data);
      if (r.patch) patches.push({ ...r.patch, base: offsets[k]! });
    });
    arena.upload(); // static structs once; dynamic ones again every run
    const nDynamic = patches.length;
    const dynamicEnd = nDynamic ? offsets[nDynamic - 1]! + slotData[nDynamic - 1]!.data.byteLength : 0;
    // 4. Bind every pass.
    const callSteps: Step[][] = [];
    const bound: ChainCall[] = [];
    plans.forEach((plan, i) => {
      const call: OpCall = step.calls[i]!;
      const tensors: Record<string, GpuTensorRef> = {};
      for (const [name, t] of Object.entries(call.tensors)) {
        const buffer = t.act !== undefined ? actBuffer(t.act) : (t.buffer ?? fail(`call ${i} (${call.op}): tensor ${name} has no buffer`));
        tensors[name] = tensorRef(buffer, t);
      }
      const scratch = new Map(plan.intermediates.map((m, j) => [m.id, actBuffer(scratchAct[i]![j]!)]));
      let u = 0;
      const flat = reqs[i]!.flat();
      const slots = new Map<object, { buffer: GPUBuffer; offset: number; size: number }>();
      const ds = planDispatches(dev, plan, prepared[i]!, {
        tensors,
        scratch,
        uniform: (_p, b) => {
          const r = flat[u++]!;
          const k = slotOf.get(r.key)!;
          const slot = arena.slot(offsets[k]!, b.size);
          slots.set(b, slot);
          return slot;
        },
      });
      callSteps.push(ds.map((d) => dispatchStep(dev, d)));
      bound.push({ plan, tensors, uniform: (_p, b) => slots.get(b)! });
    });
    // 5. Runs of calls the step asked to link, as one dispatch each where they link (chain.ts), on devices whose
    // workgroups start in order; the others stay as they are, with the reason in stats.linkRefused
    const linkRefused: string[] = [];
    let linked = 0;
    let sync: GPUBuffer | undefined;
    for (const [first, last, opts] of step.links) {
      const calls = bound.slice(first, last + 1);
      const what = `calls ${first} .. ${last} (${calls.map((c) => c.plan.variant).join(' + ')})`;
      if (!chainsCanWait(dev.caps)) {
        linkRefused.push(`${what}: this device does not start workgroups in order (chainsCanWait)`);
        continue;
      }
      sync ??= dev.buffers.acquire(Math.max(16, 4 * Math.max(...step.links.map(([a, b]) => b - a + 1))), STORAGE_USAGE, `${label}.chain-sync`);
      try {
        const { dispatch } = await linkCalls(dev, calls, sync, `chain [${calls.map((c) => c.plan.variant).join(' + ')}]`, { tail: opts?.tail });
        callSteps[first] = [dispatchStep(dev, dispatch)];
        for (let i = first + 1; i <= last; i++) callSteps[i] = [];
        linked += last - first;
      } catch (e) {
        if (!(e instanceof ChainLinkError)) throw e;
        linkRefused.push(`${what}: ${e.message}`);
      }
    }
    if (sync) {
      // the counters start at zero (a pooled buffer may hold old words)
      writeBuffer(dev.device, sync, new Uint32Array(sync.size / 4));
      owned.push(sync);
    }
    const steps = callSteps.flat();
    const stats: ProgramStats = {
      dispatches: steps.length,
      passes: steps.length ? 1 : 0,
      patchedStructs: patches.length,
      patchedBytes: dynamicEnd,
      activationBytes: owned.reduce((a, b) => a + b.size, 0),
      uniformBytes: arena.bytes,
      calls: plans.length,
      linkedDispatchesSaved: linked,
      linkRefused,
    };
    return new Program(label, steps, arena, patches, dynamicEnd, owned, (b) => dev.buffers.release(b), stats);
  }

  /** Writes the step variables into the dynamic uniform fields and uploads them (one writeBuffer). */
  setVars(vars: StepVars): void {
    this.patchVars(vars);
    this.arena.upload(this.dynamicEnd);
  }

  private patchVars(vars: StepVars): void {
    const view = this.arena.view;
    for (const p of this.patches) {
      for (const x of p.inputs) {
        const v = typeof x.value === 'number' ? x.value : varValue(x.value, vars);
        if ((x.bounds.min !== undefined && v < x.bounds.min) || (x.bounds.max !== undefined && v > x.bounds.max)) checkDynamicValue(p.plan.contract, x.name, x.bounds, v);
        p.values[x.name] = v;
      }
      writeDynamicFields(p.plan, p.binding, p.values, view, p.base);
    }
  }

  /**
   * Sets the step variables and appends the dispatch list to `rec`. With `slot`, for several runs recorded into one
   * submit (run i of the submit takes slot i): the variables go through a staging slot and a copy recorded before the
   * dispatches, so each run reads its own.
   */
  record(rec: Recorder, vars: StepVars, slot?: number): void {
    if (slot === undefined) this.setVars(vars);
    else {
      this.patchVars(vars);
      if (this.dynamicEnd > 0) {
        const c = this.arena.stage(this.dynamicEnd, slot);
        rec.copy(c.src, c.srcOffset, c.dst, 0, c.size);
      }
    }
    rec.append(this);
  }

  destroy(): void {
    this.arena.destroy();
    for (const b of this.owned) this.release(b);
    this.owned.length = 0;
  }
}

function hex(data: ArrayBuffer): string {
  const u = new Uint32Array(data);
  let s = '';
  for (let i = 0; i < u.length; i++) s += u[i]!.toString(36) + ',';
  return s;
}
