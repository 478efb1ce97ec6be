/**
 * Waiting on the GPU from Node. Dawn's node bindings do not keep the event loop alive while a map, a
 * submitted-work promise or an error scope is pending, so a process whose only pending work is a GPU wait can
 * exit early with code 0. gpuWait holds a timer while the promise is pending (a no-op cost in the browser).
 */
export async function gpuWait<T>(p: Promise<T>): Promise<T> {
  const timer = setInterval(() => {}, 1 << 30);
  try {
    return await p;
  } finally {
    clearInterval(timer);
  }
}

/**
 * Dawn's node bindings poll with a setImmediate chain (a new callback and handles per turn) for as long as any GPU
 * promise is pending and the event loop is idle, so waiting 5 ms for a decode step spins thousands of turns and
 * churns the allocator (malloc_consolidate stalls were seen). `sleepUntil` blocks the thread instead (no event-loop
 * turns, no allocation) until a deadline the caller expects the GPU to be nearly done by; the remaining wait then
 * polls briefly. In a browser (no blocking allowed on the main thread) it does nothing.
 */
const cell = typeof SharedArrayBuffer !== 'undefined' ? new Int32Array(new SharedArrayBuffer(4)) : undefined;
const canBlock = typeof process !== 'undefined' && !!process.versions?.node && !!cell;

export function sleepUntil(deadline: number): void {
  const ms = deadline - performance.now();
  if (!canBlock || ms < 0.05) return;
  Atomics.wait(cell!, 0, 0, Math.min(ms, 1000));
}

/** Resolves when all work submitted to the device's queue so far has completed. */
export function queueIdle(dev: { device: GPUDevice }): Promise<void> {
  return gpuWait(dev.device.queue.onSubmittedWorkDone());
}

/**
 * Waits for `p` in short blocking naps with one event-loop turn between them (Dawn's node bindings process GPU events
 * in a setImmediate callback, so a turn is what completes a map), instead of spinning turns back to back: on a CPU
 * adapter (SwiftShader) the spinning main thread takes a core from the threads that run the shaders. Each nap adds up
 * to `napMs` of latency after the GPU is done. With `spinMs`, the first `spinMs` are spun (a wait of unknown length
 * that a GPU finishes within them pays no nap). In a browser (no blocking) it is a plain await.
 */
export async function napUntil<T>(p: Promise<T>, napMs: number, spinMs = 0): Promise<T> {
  if (!canBlock) return p;
  let done = false;
  const watched = p.finally(() => (done = true));
  watched.catch(() => {});
  const spinUntil = performance.now() + spinMs;
  while (!done && performance.now() < spinUntil) await new Promise<void>((r) => setImmediate(r));
  while (!done) {
    Atomics.wait(cell!, 0, 0, napMs);
    await new Promise<void>((r) => setImmediate(r));
  }
  return watched;
}
