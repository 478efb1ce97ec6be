/**
 * Activation memory of a step: buffers shared by activations whose lifetimes (first to last call that uses them)
 * do not overlap. Greedy in order of first use: reuse the smallest free buffer that is large enough, else the
 * largest free one grown to fit, else a new one.
 */
import type { Activation } from './step.ts';

export interface ActivationPlan {
  /** Buffer index of each activation (-1: never used). */
  slot: number[];
  /** Byte size of each buffer. */
  sizes: number[];
}

export function planActivations(acts: readonly Activation[]): ActivationPlan {
  const order = acts.map((a, i) => i).filter((i) => acts[i]!.first >= 0).sort((a, b) => acts[a]!.first - acts[b]!.first || a - b);
  const slot = acts.map(() => -1);
  const sizes: number[] = [];
  /** Last call using each buffer's current occupant. */
  const busyUntil: number[] = [];
  for (const i of order) {
    const a = acts[i]!;
    let best = -1;
    let grow = -1;
    for (let b = 0; b < sizes.length; b++) {
      if (busyUntil[b]! >= a.first) continue;
      if (sizes[b]! >= a.bytes) {
        if (best < 0 || sizes[b]! < sizes[best]!) best = b;
      } else if (grow < 0 || sizes[b]! > sizes[grow]!) grow = b;
    }
    if (best < 0 && grow >= 0) {
      best = grow;
      sizes[grow] = a.bytes;
    }
    if (best < 0) {
      best = sizes.length;
      sizes.push(a.bytes);
      busyUntil.push(-1);
    }
    slot[i] = best;
    busyUntil[best] = a.last;
  }
  return { slot, sizes };
}
