/**
 * The per-op path: a step's calls recorded one by one through the op runner (a plan-cache lookup, a uniform pack
 * and a bind-group lookup per call, every run). It runs exactly the kernels and buffers a compiled Program runs, so
 * it is the reference the program is checked against, and the baseline the decode bench compares with.
 */
import { STORAGE_USAGE } from '../gpu/buffers.ts';
import type { Recorder } from '../gpu/recorder.ts';
import type { OpRunner, Tensor } from '../ops/runner.ts';
import { planActivations } from './liveness.ts';
import { resolveAttrs, type StepBuilder, type StepVars } from './step.ts';

export async function recordInterpreted(ops: OpRunner, step: StepBuilder, rec: Recorder, vars: StepVars): Promise<void> {
  const live = planActivations(step.acts);
  const bufs = live.sizes.map((b, i) => ops.dev.buffers.acquire(b, STORAGE_USAGE, `per-op.act${i}`));
  for (const b of bufs) rec.releaseAfterSubmit(b);
  for (const c of step.calls) {
    const tensors: Record<string, Tensor> = {};
    for (const [k, t] of Object.entries(c.tensors)) {
      const buffer = t.act !== undefined ? bufs[live.slot[t.act]!]! : t.buffer!;
      tensors[k] = { buffer, dtype: t.dtype, shape: t.shape, ...(t.offset !== undefined ? { offset: t.offset } : {}) };
    }
    await ops.record(rec, c.op, tensors, resolveAttrs(c.attrs, vars));
  }
}
