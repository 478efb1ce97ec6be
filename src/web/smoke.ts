/**
 * Browser smoke page: acquires WebGPU through navigator.gpu with the same createDevice() as Node, loads the
 * registry, runs one registry kernel (residual.default) and publishes the result on `window.tesseraSmoke`.
 */
import { createDevice, describeAdapter } from '../gpu/device.ts';
import { readFloat32, uploadBuffer } from '../gpu/buffers.ts';
import { Recorder } from '../gpu/recorder.ts';
import { parseRegistry } from '../registry/parse.ts';
import { getKernel, recordKernel, setWgslSource } from '../registry/binder.ts';

interface SmokeResult {
  adapter: string;
  features: string[];
  kernel: string;
  input: number[];
  residual: number[];
  output: number[];
  error?: string;
}

async function run(): Promise<SmokeResult> {
  setWgslSource(async (file) => {
    const r = await fetch(`/kernels/${file}`);
    if (!r.ok) throw new Error(`fetch /kernels/${file}: HTTP ${r.status}`);
    return r.text();
  });
  const regJson = await (await fetch('/spec/kernel-registry.json')).json();
  const reg = parseRegistry(regJson, 'kernel-registry.json');
  const dev = await createDevice();
  const n = 1000;
  const a = new Float32Array(n).map((_, i) => Math.sin(i));
  const b = new Float32Array(n).map((_, i) => Math.cos(i * 0.5));
  const v = reg.variant('residual.default');
  const k = await getKernel(dev, v);
  const out = dev.buffers.acquire(n * 4, undefined, 'out');
  const rec = new Recorder(dev);
  recordKernel(
    rec,
    dev,
    k,
    { input: uploadBuffer(dev.device, a, 'a'), residual: uploadBuffer(dev.device, b, 'b'), output: out },
    { size: n, scale: 1 },
    [Math.ceil(n / v.workgroup[0]), 1, 1],
  );
  await rec.submit();
  const y = await readFloat32(dev.device, out, n);
  const result = {
    adapter: describeAdapter(dev.caps),
    features: [...dev.caps.features].sort(),
    kernel: v.id,
    input: [...a],
    residual: [...b],
    output: [...y],
  };
  dev.destroy();
  return result;
}

const w = window as unknown as { tesseraSmoke?: SmokeResult | { error: string } };
run().then(
  (r) => {
    w.tesseraSmoke = r;
    document.body.textContent = `${r.kernel} on ${r.adapter}: ok`;
  },
  (e: Error) => {
    w.tesseraSmoke = { error: `${e.name}: ${e.message}` };
    document.body.textContent = `error: ${e.message}`;
  },
);
