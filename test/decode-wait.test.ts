// How the decode loop waits for a token: the sleep before polling follows the shortest recent step and never holds a
// fast step back (src/runtime/decode-loop.ts).
import { describe, expect, it } from 'vitest';
import { napUntil } from '../src/gpu/wait.ts';
import { readSleepMs, StepIntervals } from '../src/runtime/decode-loop.ts';

/** The loop's intervals when the GPU (or host) needs `stepMs` a token and, after a sleep, the readback resolves
 * `latencyMs` after it ends (each interval is the longer of the step and the sleep plus that latency; without a
 * sleep the loop polls, and the latency hides under the steps queued behind), starting from `first`. */
function settle(stepMs: number, latencyMs: number, first: number[], steps = 200): number[] {
  const iv = new StepIntervals();
  for (const ms of first) iv.add(ms);
  const out: number[] = [];
  for (let i = 0; i < steps; i++) {
    const sleep = readSleepMs(iv.shortest());
    const ms = Math.max(stepMs, sleep > 0 ? sleep + latencyMs : 0);
    iv.add(ms);
    out.push(ms);
  }
  return out;
}

describe('decode loop waits', () => {
  it('sleeps through most of a long step and not at all through a short one', () => {
    expect(readSleepMs(0)).toBe(0);
    expect(readSleepMs(0.8)).toBe(0);
    expect(readSleepMs(2.1)).toBe(0);
    expect(readSleepMs(25)).toBeCloseTo(20.5, 9);
    expect(readSleepMs(25)).toBeLessThan(25);
  });

  it('keeps the shortest of the last intervals', () => {
    const iv = new StepIntervals(3);
    expect(iv.shortest()).toBe(0);
    for (const ms of [5, 2, 9]) iv.add(ms);
    expect(iv.shortest()).toBe(2);
    iv.add(7); // 5 drops out, then 2
    expect(iv.shortest()).toBe(2);
    iv.add(8);
    expect(iv.shortest()).toBe(7);
  });

  it('runs at the step time right after a stall, whatever the readback latency', () => {
    // steps of 0.8 / 2.1 / 25 ms, then one 300 ms interval (the whole-cache decode program compiled mid-generation),
    // with up to 1.5 ms of readback latency
    for (const stepMs of [0.8, 2.1, 25]) {
      for (const latencyMs of [0, 0.4, 1.5]) {
        const ms = settle(stepMs, latencyMs, [stepMs, stepMs, stepMs, 300]);
        expect(ms.every((m) => m === stepMs), `step ${stepMs} ms, latency ${latencyMs} ms: ${ms.slice(0, 4).join(', ')}`).toBe(true);
      }
    }
  });

  it('comes back from a long first interval', () => {
    // not a case the loop makes (the first decode program compiles before the first interval starts), but it must
    // not hold the loop back for long
    const ms = settle(2.1, 0.4, [300]);
    expect(ms.findIndex((m) => m === 2.1)).toBeLessThan(50);
    expect(ms.slice(50).every((m) => m === 2.1)).toBe(true);
  });

  it('the rule it replaced (80% of an average) settles at five times the latency for a fast step', () => {
    // the old loop, for contrast: the same model of one step's interval
    let avg = 300;
    let ms = 0;
    for (let i = 0; i < 2000; i++) {
      ms = Math.max(0.8, 0.8 * avg + 0.4);
      avg = 0.8 * avg + 0.2 * ms;
    }
    expect(ms).toBeCloseTo(2.0, 2);
  });
});

describe('napUntil (long steps polled in naps)', () => {
  const later = <T>(v: T, ms: number) => new Promise<T>((r) => setTimeout(() => r(v), ms));

  it('returns the value once the promise settles, rethrows its error', async () => {
    const t0 = performance.now();
    expect(await napUntil(later(7, 5), 0.25)).toBe(7);
    expect(performance.now() - t0).toBeLessThan(500);
    expect(await napUntil(Promise.resolve('now'), 0.25)).toBe('now');
    await expect(napUntil(new Promise((_, no) => setTimeout(() => no(new Error('lost')), 2)), 0.25)).rejects.toThrow('lost');
  });

  it('with spinMs, spins event-loop turns first, then naps (the prompt readback, whose length is not known)', async () => {
    // event-loop turns taken while a wait runs: spinning takes a turn after every other, a nap of 5 ms one per nap
    const turnsDuring = async (wait: Promise<unknown>) => {
      let turns = 0;
      let on = true;
      const tick = () => {
        turns++;
        if (on) setImmediate(tick);
      };
      setImmediate(tick);
      await wait;
      on = false;
      return turns;
    };
    const spun = await turnsDuring(napUntil(later('a', 30), 5, 30));
    const napped = await turnsDuring(napUntil(later('b', 30), 5, 0));
    expect(napped).toBeLessThan(20); // ~6 naps of 5 ms
    expect(spun).toBeGreaterThan(2 * napped);
    expect(await napUntil(later('settled in the spin', 1), 0.25, 50)).toBe('settled in the spin');
    expect(await napUntil(later('settled in a nap', 10), 0.25, 2)).toBe('settled in a nap');
    await expect(napUntil(new Promise((_, no) => setTimeout(() => no(new Error('lost')), 1)), 0.25, 50)).rejects.toThrow('lost');
  });
});
