/**
 * Browser smoke page: acquires WebGPU through navigator.gpu with the same createDevice() as Node, loads the registry
 * and the residual op contract, runs the contract on the GPU with runContract (the launch path every kernel takes:
 * resolve, then record the plan's passes) and publishes the result on `window.tesseraSmoke`.
 */
import { createDevice, describeAdapter } from '../gpu/device.ts';
import { validateContract } from '../contracts/schema.ts';
import { runContract } from '../contracts/run.ts';
import { parseRegistry } from '../registry/parse.ts';
import { setWgslSource } from '../registry/binder.ts';

interface SmokeResult {
  adapter: string;
  features: string[];
  /** `contract.variant` that ran, and the registry kernels of its passes */
  contract: string;
  kernel: string;
  input: number[];
  residual: number[];
  output: number[];
  error?: string;
}

async function fetchJson(path: string): Promise<unknown> {
  const r = await fetch(path);
  if (!r.ok) throw new Error(`fetch ${path}: HTTP ${r.status}`);
  return r.json();
}

async function run(): Promise<SmokeResult> {
  setWgslSource(async (file) => {
    const r = await fetch(`/kernels/${file}`);
    if (!r.ok) throw new Error(`fetch /kernels/${file}: HTTP ${r.status}`);
    return r.text();
  });
  const registry = parseRegistry(await fetchJson('/spec/kernel-registry.json'), 'kernel-registry.json');
  const contract = validateContract(await fetchJson('/contracts/residual.contract.json'), 'residual.contract.json');
  const dev = await createDevice();
  const n = 1000;
  const a = new Float32Array(n).map((_, i) => Math.sin(i));
  const b = new Float32Array(n).map((_, i) => Math.cos(i * 0.5));
  const { outputs, plan } = await runContract(dev, contract, {
    inputs: { a: { dtype: 'float32', shape: [n], data: a }, b: { dtype: 'float32', shape: [n], data: b } },
    attributes: { scale: 1 },
    registry,
    source: 'residual.contract.json',
  });
  const y = outputs.out!.data as Float32Array;
  const result = {
    adapter: describeAdapter(dev.caps),
    features: [...dev.caps.features].sort(),
    contract: `${contract.name}.${plan.variant}`,
    kernel: plan.passes.map((p) => p.kernel ?? p.shader).join(', '),
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
    document.body.textContent = `${r.contract} (${r.kernel}) on ${r.adapter}: ok`;
  },
  (e: Error) => {
    w.tesseraSmoke = { error: `${e.name}: ${e.message}` };
    document.body.textContent = `error: ${e.message}`;
  },
);
