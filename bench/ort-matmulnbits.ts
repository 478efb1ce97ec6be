/**
 * ONNX Runtime's WebGPU MatMulNBits (4 bits, block 32, f32 activations) as the peer of bench/kernels.ts: one
 * single-node model per shape (weights and scales as initializers, random), timed as wall time per session.run
 * (upload of A, the kernel, download of Y), median of the repetitions. bench/kernels.ts times our call the same way
 * for the ratio.
 */
import { attr, buildSingleNodeModel } from '../src/onnx/build.ts';

type Ort = typeof import('onnxruntime-node');

export async function loadOrt(): Promise<Ort | undefined> {
  try {
    const m = (await import('onnxruntime-node')) as unknown as { default?: Ort } & Ort;
    return m.default ?? m;
  } catch (e) {
    console.error(`onnxruntime-node is not available: ${(e as Error).message}`);
    return undefined;
  }
}

export interface OrtTiming {
  ep: string;
  wallMsMedian: number;
  reps: number;
}

/** Wall ms per run of MatMulNBits for Y[M, N] = A[M, K] . dequant(B)[N, K]^T. */
export async function timeMatMulNBits(ort: Ort, M: number, N: number, K: number, reps: number, ep = 'webgpu'): Promise<OrtTiming> {
  const blocks = K / 32;
  const b = new Uint8Array(N * blocks * 16);
  let seed = 0x2545f491;
  for (let i = 0; i < b.length; i++) b[i] = (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) >>> 24;
  const scales = new Float32Array(N * blocks).fill(0.001);
  const model = buildSingleNodeModel({
    opType: 'MatMulNBits',
    domain: 'com.microsoft',
    inputs: [
      { name: 'A', dtype: 'float32', shape: [M, K] },
      { name: 'B', dtype: 'uint8', shape: [N, blocks, 16], initializer: b },
      { name: 'scales', dtype: 'float32', shape: [N * blocks], initializer: scales },
    ],
    outputs: [{ name: 'Y', dtype: 'float32', shape: [M, N] }],
    attributes: { K: attr.int(K), N: attr.int(N), bits: attr.int(4), block_size: attr.int(32) },
  });
  const session = await ort.InferenceSession.create(model, { executionProviders: [ep], graphOptimizationLevel: 'all', logSeverityLevel: 3 });
  try {
    const TensorCtor = ort.Tensor as unknown as new (type: string, data: unknown, dims: readonly number[]) => InstanceType<Ort['Tensor']>;
    const a = new TensorCtor('float32', new Float32Array(M * K).map((_, i) => Math.sin(i) * 0.5), [M, K]);
    for (let i = 0; i < 3; i++) await session.run({ A: a });
    const times: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t0 = performance.now();
      await session.run({ A: a });
      times.push(performance.now() - t0);
    }
    times.sort((x, y) => x - y);
    return { ep, wallMsMedian: times[times.length >> 1]!, reps };
  } finally {
    await session.release();
  }
}
