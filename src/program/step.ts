/**
 * A step: the op calls of one forward (or sampling) step, emitted once by a model builder. Tensors are GPU buffers
 * the caller owns (weights, KV cache, sampler state) or activations the program allocates; attribute values are
 * constants or dynamic values (`dyn('pos', 1)`: the step variable `pos` plus 1), which may feed only the contract
 * attributes declared dynamic. A step is compiled into a Program (program.ts) or run op by op (interpret.ts).
 */
import type { AttributeValue } from '../contracts/index.ts';
import { tensorBytes, type TensorSpec } from '../ops/runner.ts';

/** A per-step value: step variable `var` plus a constant. */
export interface Dyn {
  readonly var: string;
  readonly add: number;
}

export const dyn = (name: string, add = 0): Dyn => ({ var: name, add });
export const isDyn = (x: unknown): x is Dyn => typeof x === 'object' && x !== null && !Array.isArray(x) && 'var' in x;
/** `a + n` for a constant or a dynamic value. */
export const plus = (a: number | Dyn, n: number): number | Dyn => (typeof a === 'number' ? a + n : dyn(a.var, a.add + n));

export type OpAttr = AttributeValue | Dyn;
export type StepVars = Readonly<Record<string, number>>;

/** A tensor in a step: a caller-owned buffer range, or activation `act` (allocated by the program). */
export interface StepTensor extends TensorSpec {
  buffer?: GPUBuffer;
  offset?: number;
  act?: number;
}

export interface OpCall {
  op: string;
  tensors: Readonly<Record<string, StepTensor>>;
  attrs: Readonly<Record<string, OpAttr>>;
}

export interface Activation {
  label: string;
  bytes: number;
  /** First and last call that uses it (liveness). */
  first: number;
  last: number;
}

/** How a run of linked calls runs (src/program/chain.ts). */
export interface LinkOptions {
  /** The run's last call in the last workgroups to finish the call before it, not in workgroups of its own (ChainPart.tail). */
  tail?: boolean;
}

/** What a model builder emits into. */
export interface OpSink {
  /** A fresh activation tensor (f32 unless said). */
  act(label: string, shape: readonly number[], dtype?: string): StepTensor;
  op(op: string, tensors: Readonly<Record<string, StepTensor>>, attrs?: Readonly<Record<string, OpAttr>>): void;
  /**
   * Asks that the last `n` ops run as one dispatch (src/program/chain.ts) where the program can link them; sinks that
   * run ops one by one leave it out.
   */
  link?(n: number, opts?: LinkOptions): void;
}

/** Dtypes an activation may have (block-quantized formats are weights only). */
const ACTIVATION_DTYPES = new Set(['float32', 'uint32', 'int32', 'float16']);

export class StepBuilder implements OpSink {
  readonly calls: OpCall[] = [];
  readonly acts: Activation[] = [];
  /** Runs of calls [first, last] to link into one dispatch each (link). */
  readonly links: [number, number, LinkOptions?][] = [];

  link(n: number, opts?: LinkOptions): void {
    if (!Number.isInteger(n) || n < 2 || n > this.calls.length) throw new RangeError(`link(${n}): needs 2 .. ${this.calls.length} calls`);
    const first = this.calls.length - n;
    if (this.links.some(([, last]) => last >= first)) throw new RangeError(`link(${n}): calls ${first} .. ${this.calls.length - 1} overlap a linked run`);
    this.links.push(opts ? [first, this.calls.length - 1, opts] : [first, this.calls.length - 1]);
  }

  act(label: string, shape: readonly number[], dtype = 'float32'): StepTensor {
    if (!ACTIVATION_DTYPES.has(dtype)) throw new TypeError(`activation ${label}: unsupported dtype ${dtype}`);
    const bytes = Math.max(16, tensorBytes({ dtype, shape }));
    this.acts.push({ label, bytes, first: -1, last: -1 });
    return { act: this.acts.length - 1, dtype, shape };
  }

  op(op: string, tensors: Readonly<Record<string, StepTensor>>, attrs: Readonly<Record<string, OpAttr>> = {}): void {
    const i = this.calls.length;
    for (const t of Object.values(tensors)) {
      if (t.act === undefined) continue;
      const a = this.acts[t.act]!;
      if (a.first < 0) a.first = i;
      a.last = i;
    }
    this.calls.push({ op, tensors, attrs });
  }
}

/** Attribute values of a call for these step variables (dynamic values resolved). */
export function resolveAttrs(attrs: Readonly<Record<string, OpAttr>>, vars: StepVars): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const k in attrs) {
    const a = attrs[k]!;
    out[k] = isDyn(a) ? varValue(a, vars) : a;
  }
  return out;
}

export function varValue(d: Dyn, vars: StepVars): number {
  const v = vars[d.var];
  if (v === undefined) throw new RangeError(`step variable "${d.var}" has no value (given: ${Object.keys(vars).join(', ') || 'none'})`);
  return v + d.add;
}
