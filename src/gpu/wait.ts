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
