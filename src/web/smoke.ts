/**
 * Browser smoke page: acquires WebGPU through navigator.gpu with the same createDevice() as Node, takes the shipped
 * registry, the residual op contract and its WGSL from the bundle (no fetch, no file system), runs the contract on the
 * GPU with runContract (the launch path every kernel takes: resolve, then record the plan's passes) and publishes the
 * result on `window.tesseraSmoke`.
 */
import { createDevice, describeAdapter } from '../gpu/device.ts';
import { runContract } from '../contracts/run.ts';
import { opContract } from '../ops/runner.ts';
import { defaultRegistry } from '../registry/bundled.ts';

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

async function run(): Promise<SmokeResult> {
  const registry = defaultRegistry();
  const contract = opContract('residual');
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
