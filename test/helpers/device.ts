/** One WebGPU device per test worker process, shared by the test files it runs; it lives until the worker stops. */
import { createDevice, describeAdapter, type TesseraDevice } from '../../src/gpu/device.ts';

const KEY = Symbol.for('tessera.testDevice');
type Holder = { [KEY]?: Promise<TesseraDevice> };

export function testDevice(): Promise<TesseraDevice> {
  const g = globalThis as Holder;
  g[KEY] ??= createDevice({ timestamps: true, checked: true }).then((dev) => {
    console.log(`adapter: ${describeAdapter(dev.caps)}`);
    return dev;
  });
  return g[KEY];
}
