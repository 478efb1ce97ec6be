/**
 * One WebGPU device per test worker process, shared by every test file that worker runs and never destroyed:
 * creating and destroying Dawn devices repeatedly inside vitest workers occasionally crashed the worker in Dawn's
 * teardown ("Owner died" / futex errors), so the device lives until the worker process is stopped.
 */
import { createDevice, describeAdapter, type TesseraDevice } from '../../src/gpu/device.ts';

const KEY = Symbol.for('tessera.testDevice');
type Holder = { [KEY]?: Promise<TesseraDevice> };

export function testDevice(): Promise<TesseraDevice> {
  const g = globalThis as Holder;
  g[KEY] ??= createDevice({ timestamps: true }).then((dev) => {
    console.log(`adapter: ${describeAdapter(dev.caps)}`);
    return dev;
  });
  return g[KEY];
}
