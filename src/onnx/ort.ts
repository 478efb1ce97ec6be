/**
 * Runs a serialised ONNX model on ONNX Runtime's CPU execution provider (onnxruntime-node). Test/oracle only:
 * onnxruntime-node is a dev dependency and is loaded lazily.
 */
import type { OnnxDType, OnnxTensorData } from './build.ts';

export interface OrtTensorValue {
  dtype: OnnxDType;
  shape: readonly number[];
  data: OnnxTensorData;
}

export interface OrtRunOptions {
  /** Output names to fetch; all graph outputs when omitted. */
  outputs?: readonly string[];
  /** ORT graph optimisation level; 'disabled' keeps the single node as written. Default 'disabled'. */
  graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
  intraOpNumThreads?: number;
}

type OrtModule = typeof import('onnxruntime-node');
let ortModule: Promise<OrtModule> | undefined;

function loadOrt(): Promise<OrtModule> {
  ortModule ??= import('onnxruntime-node').then((m) => ((m as { default?: OrtModule }).default ?? m) as OrtModule);
  return ortModule;
}

// ORT's tensor type names for the dtypes the builder knows (ORT has no 'float64'/'float16' spelling of its own).
const ORT_TYPE: Record<OnnxDType, string> = {
  float32: 'float32',
  uint8: 'uint8',
  int8: 'int8',
  uint16: 'uint16',
  int16: 'int16',
  int32: 'int32',
  int64: 'int64',
  bool: 'bool',
  float16: 'float16',
  float64: 'float64',
  uint32: 'uint32',
  uint64: 'uint64',
};

const FROM_ORT_TYPE: Record<string, OnnxDType> = Object.fromEntries(
  Object.entries(ORT_TYPE).map(([k, v]) => [v, k as OnnxDType]),
);

/**
 * Creates a CPU session for `model`, runs it once on `feeds` and returns the outputs (copied out of ORT's
 * buffers). Throws ORT's own message, prefixed with the stage that failed, when the model is rejected.
 */
export async function runOnnxModel(
  model: Uint8Array,
  feeds: Readonly<Record<string, OrtTensorValue>>,
  options: OrtRunOptions = {},
): Promise<Record<string, OrtTensorValue>> {
  const ort = await loadOrt();
  let session: Awaited<ReturnType<OrtModule['InferenceSession']['create']>>;
  try {
    session = await ort.InferenceSession.create(model, {
      executionProviders: ['cpu'],
      graphOptimizationLevel: options.graphOptimizationLevel ?? 'disabled',
      ...(options.intraOpNumThreads !== undefined ? { intraOpNumThreads: options.intraOpNumThreads } : {}),
      logSeverityLevel: 4,
    });
  } catch (e) {
    throw new Error(`onnxruntime: session creation failed: ${(e as Error).message}`);
  }
  try {
    type OrtTensor = InstanceType<OrtModule['Tensor']>;
    // The overloaded typed constructors of ort.Tensor, seen as one untyped signature.
    const TensorCtor = ort.Tensor as unknown as new (type: string, data: OnnxTensorData, dims: readonly number[]) => OrtTensor;
    const ortFeeds: Record<string, OrtTensor> = {};
    for (const [name, v] of Object.entries(feeds)) {
      const ortType = ORT_TYPE[v.dtype];
      if (!ortType) throw new Error(`onnxruntime: feed ${name}: unsupported dtype ${v.dtype}`);
      ortFeeds[name] = new TensorCtor(ortType, v.data, v.shape);
    }
    let results: Record<string, OrtTensor>;
    try {
      results = options.outputs
        ? await session.run(ortFeeds, options.outputs as string[])
        : await session.run(ortFeeds);
    } catch (e) {
      throw new Error(`onnxruntime: run failed: ${(e as Error).message}`);
    }
    const out: Record<string, OrtTensorValue> = {};
    for (const [name, t] of Object.entries(results)) {
      const dtype = FROM_ORT_TYPE[t.type];
      if (!dtype) throw new Error(`onnxruntime: output ${name}: unsupported ORT type ${t.type}`);
      const data = t.data as OnnxTensorData;
      out[name] = { dtype, shape: [...t.dims], data: data.slice() as OnnxTensorData };
    }
    return out;
  } finally {
    await session.release();
  }
}
