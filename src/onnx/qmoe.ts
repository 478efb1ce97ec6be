/**
 * com.microsoft.QMoE as a single-node ONNX model, and a runner on ONNX Runtime's CPU provider (test oracle).
 */
import type { QmoeAttrs } from '../reference/qmoe.ts';
import { QMOE_ONNX_INPUTS, type QmoeTensorName, type QmoeTensors } from '../reference/qmoe-cases.ts';
import { attr, buildSingleNodeModel, type OnnxAttribute, type OnnxValueSpec } from './build.ts';
import { runOnnxModel, type OrtRunOptions } from './ort.ts';

const FLOAT_ATTRS = new Set(['activation_alpha', 'activation_beta', 'swiglu_limit']);
const STRING_ATTRS = new Set(['activation_type']);

/** Types QMoE attributes for the ONNX encoder (floats as FLOAT, strings as STRING, the rest INT). */
export function qmoeOnnxAttributes(attrs: QmoeAttrs | Readonly<Record<string, unknown>>): Record<string, OnnxAttribute> {
  const out: Record<string, OnnxAttribute> = {};
  for (const [name, v] of Object.entries(attrs)) {
    if (v === undefined) continue;
    if (STRING_ATTRS.has(name)) {
      if (typeof v !== 'string') throw new Error(`QMoE attribute ${name} must be a string, got ${JSON.stringify(v)}`);
      out[name] = attr.string(v);
    } else if (FLOAT_ATTRS.has(name)) {
      if (typeof v !== 'number') throw new Error(`QMoE attribute ${name} must be a number, got ${JSON.stringify(v)}`);
      out[name] = attr.float(v);
    } else {
      if (typeof v !== 'number' || !Number.isInteger(v)) throw new Error(`QMoE attribute ${name} must be an integer, got ${JSON.stringify(v)}`);
      out[name] = attr.int(v);
    }
  }
  return out;
}

export interface QmoeModelOptions {
  /** Tensors stored as initializers (constant weights, as in a real model) instead of graph inputs. */
  initializers?: readonly QmoeTensorName[];
  /** Optional ORT input 14 (`router_weights`, [tokens, E]). */
  routerWeights?: Float32Array;
}

/** Builds the QMoE model; returns its bytes and the feeds for the non-initializer inputs. */
export function buildQmoeModel(
  tensors: QmoeTensors,
  attrs: QmoeAttrs,
  opts: QmoeModelOptions = {},
): { model: Uint8Array; feeds: Record<string, { dtype: 'float32' | 'uint8'; shape: number[]; data: Float32Array | Uint8Array }> } {
  const init = new Set(opts.initializers ?? []);
  const inputs: (OnnxValueSpec | null)[] = [];
  const feeds: Record<string, { dtype: 'float32' | 'uint8'; shape: number[]; data: Float32Array | Uint8Array }> = {};
  for (const { key, onnx, index } of QMOE_ONNX_INPUTS) {
    const t = tensors[key];
    while (inputs.length < index) inputs.push(null);
    if (!t) {
      inputs.push(null);
      continue;
    }
    if (init.has(key)) {
      inputs.push({ name: onnx, dtype: t.dtype, shape: t.shape, initializer: t.data });
    } else {
      inputs.push({ name: onnx, dtype: t.dtype, shape: t.shape });
      feeds[onnx] = t;
    }
  }
  if (opts.routerWeights) {
    while (inputs.length < 14) inputs.push(null);
    const shape = [...tensors.routerT.shape];
    inputs.push({ name: 'router_weights', dtype: 'float32', shape });
    feeds['router_weights'] = { dtype: 'float32', shape, data: opts.routerWeights };
  }
  // Drop trailing absent optional inputs.
  while (inputs.length > 0 && inputs[inputs.length - 1] === null) inputs.pop();
  const model = buildSingleNodeModel({
    opType: 'QMoE',
    domain: 'com.microsoft',
    inputs,
    // the output has the input's type (T); float16 callers pass their f16 bits in inputT
    outputs: [{ name: 'output', dtype: tensors.inputT.dtype, shape: tensors.inputT.shape }],
    attributes: qmoeOnnxAttributes(attrs),
  });
  return { model, feeds };
}

/** Runs QMoE on ONNX Runtime's CPU provider and returns the output tensor data. */
export async function runQmoeOrt(
  tensors: QmoeTensors,
  attrs: QmoeAttrs,
  opts: QmoeModelOptions & OrtRunOptions = {},
): Promise<Float32Array> {
  const { model, feeds } = buildQmoeModel(tensors, attrs, opts);
  const out = await runOnnxModel(model, feeds, opts);
  const y = out['output'];
  if (!y || !(y.data instanceof Float32Array)) throw new Error('onnxruntime: QMoE produced no float32 output');
  return y.data;
}
