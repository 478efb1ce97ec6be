/**
 * Builds a tiny ONNX model holding a single node, for checking one operator against ONNX Runtime.
 *
 * Field numbers are those of onnx.proto (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
 * ValueInfoProto, TypeProto, TensorShapeProto, OperatorSetIdProto).
 */
import { ProtoWriter } from './proto.ts';

/** ONNX element types this builder can declare, with their TensorProto.DataType codes. */
export const ONNX_DTYPE_CODES = {
  float32: 1,
  uint8: 2,
  int8: 3,
  uint16: 4,
  int16: 5,
  int32: 6,
  int64: 7,
  bool: 9,
  float16: 10,
  float64: 11,
  uint32: 12,
  uint64: 13,
} as const;

export type OnnxDType = keyof typeof ONNX_DTYPE_CODES;

export type OnnxTensorData =
  | Float32Array
  | Float64Array
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array;

/** A dimension: a fixed size, or a symbolic name (dim_param). */
export type OnnxDim = number | string;

export interface OnnxValueSpec {
  name: string;
  dtype: OnnxDType;
  shape: readonly OnnxDim[];
  /** When given, the value is stored in the model as an initializer instead of being a graph input. */
  initializer?: OnnxTensorData;
}

/**
 * An attribute value. Plain JS values map as: string → STRING, string[] → STRINGS, bigint → INT; numbers are
 * ambiguous (ONNX Runtime rejects a float attribute written as INT and vice versa), so they need the explicit
 * `{ type, value }` form.
 */
export type OnnxAttribute =
  | { type: 'float'; value: number }
  | { type: 'int'; value: number | bigint }
  | { type: 'string'; value: string }
  | { type: 'floats'; value: readonly number[] }
  | { type: 'ints'; value: readonly (number | bigint)[] }
  | { type: 'strings'; value: readonly string[] }
  | string
  | readonly string[]
  | bigint;

export const attr = {
  float: (value: number): OnnxAttribute => ({ type: 'float', value }),
  int: (value: number | bigint): OnnxAttribute => ({ type: 'int', value }),
  string: (value: string): OnnxAttribute => ({ type: 'string', value }),
  floats: (value: readonly number[]): OnnxAttribute => ({ type: 'floats', value }),
  ints: (value: readonly (number | bigint)[]): OnnxAttribute => ({ type: 'ints', value }),
  strings: (value: readonly string[]): OnnxAttribute => ({ type: 'strings', value }),
};

export interface SingleNodeModelSpec {
  opType: string;
  /** Operator domain; '' (default) is the standard ONNX domain. */
  domain?: string;
  /**
   * Node inputs in positional order. `null` (or a spec with an empty name) leaves an optional input out while
   * keeping the positions of the ones after it.
   */
  inputs: readonly (OnnxValueSpec | null)[];
  outputs: readonly Omit<OnnxValueSpec, 'initializer'>[];
  attributes?: Readonly<Record<string, OnnxAttribute | undefined>>;
  /** Extra opset imports; defaults are '' → 21 and 'com.microsoft' → 1. */
  opsets?: Readonly<Record<string, number>>;
  irVersion?: number;
  graphName?: string;
  nodeName?: string;
}

// AttributeProto.AttributeType
const ATTR_FLOAT = 1;
const ATTR_INT = 2;
const ATTR_STRING = 3;
const ATTR_FLOATS = 6;
const ATTR_INTS = 7;
const ATTR_STRINGS = 8;

const DTYPE_ARRAY: Record<OnnxDType, string[]> = {
  float32: ['Float32Array'],
  uint8: ['Uint8Array'],
  int8: ['Int8Array'],
  uint16: ['Uint16Array'],
  int16: ['Int16Array'],
  int32: ['Int32Array'],
  int64: ['BigInt64Array'],
  bool: ['Uint8Array'],
  float16: ['Uint16Array'],
  float64: ['Float64Array'],
  uint32: ['Uint32Array'],
  uint64: ['BigUint64Array'],
};

function dtypeCode(dtype: string, where: string): number {
  const code = (ONNX_DTYPE_CODES as Record<string, number>)[dtype];
  if (code === undefined) throw new Error(`onnx builder: ${where}: unsupported dtype '${dtype}'`);
  return code;
}

function encodeAttribute(w: ProtoWriter, name: string, a: OnnxAttribute): void {
  // AttributeProto: name=1, f=2, i=3, s=4, floats=7, ints=8, strings=9, type=20
  const norm =
    typeof a === 'string'
      ? ({ type: 'string', value: a } as const)
      : typeof a === 'bigint'
        ? ({ type: 'int', value: a } as const)
        : Array.isArray(a)
          ? ({ type: 'strings', value: a as readonly string[] } as const)
          : (a as Exclude<OnnxAttribute, string | bigint | readonly string[]>);
  w.string(1, name);
  switch (norm.type) {
    case 'float':
      w.float(2, norm.value).varint(20, ATTR_FLOAT);
      break;
    case 'int':
      if (typeof norm.value === 'number' && !Number.isInteger(norm.value)) {
        throw new Error(`onnx builder: attribute ${name}: int attribute has non-integer value ${norm.value}`);
      }
      w.varint(3, norm.value).varint(20, ATTR_INT);
      break;
    case 'string':
      w.string(4, norm.value).varint(20, ATTR_STRING);
      break;
    case 'floats':
      for (const v of norm.value) w.float(7, v);
      w.varint(20, ATTR_FLOATS);
      break;
    case 'ints':
      for (const v of norm.value) w.varint(8, v);
      w.varint(20, ATTR_INTS);
      break;
    case 'strings':
      for (const v of norm.value) w.string(9, v);
      w.varint(20, ATTR_STRINGS);
      break;
    default:
      throw new Error(`onnx builder: attribute ${name}: unknown attribute form ${JSON.stringify(a)}`);
  }
}

function encodeValueInfo(w: ProtoWriter, v: { name: string; dtype: OnnxDType; shape: readonly OnnxDim[] }): void {
  // ValueInfoProto: name=1, type=2; TypeProto.tensor_type=1; Tensor: elem_type=1, shape=2;
  // TensorShapeProto.dim=1; Dimension: dim_value=1, dim_param=2
  const code = dtypeCode(v.dtype, `value ${v.name}`);
  w.string(1, v.name);
  w.message(2, (tp) =>
    tp.message(1, (tt) => {
      tt.varint(1, code);
      tt.message(2, (sh) => {
        for (const d of v.shape) {
          sh.message(1, (dim) => {
            if (typeof d === 'string') dim.string(2, d);
            else dim.varint(1, d);
          });
        }
      });
    }),
  );
}

function numel(shape: readonly OnnxDim[], where: string): number {
  let n = 1;
  for (const d of shape) {
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 0) {
      throw new Error(`onnx builder: ${where}: an initializer needs a fixed non-negative shape, got [${shape.join(', ')}]`);
    }
    n *= d;
  }
  return n;
}

function encodeInitializer(w: ProtoWriter, v: OnnxValueSpec, data: OnnxTensorData): void {
  // TensorProto: dims=1, data_type=2, name=8, raw_data=9 (little-endian; this encoder assumes a LE host)
  const where = `initializer ${v.name}`;
  const code = dtypeCode(v.dtype, where);
  const ctor = data.constructor.name;
  if (!DTYPE_ARRAY[v.dtype].includes(ctor)) {
    throw new Error(`onnx builder: ${where}: dtype ${v.dtype} needs ${DTYPE_ARRAY[v.dtype].join('/')}, got ${ctor}`);
  }
  const n = numel(v.shape, where);
  if (data.length !== n) throw new Error(`onnx builder: ${where}: shape [${v.shape.join(', ')}] needs ${n} elements, got ${data.length}`);
  for (const d of v.shape) w.varint(1, d as number);
  w.varint(2, code);
  w.string(8, v.name);
  w.bytes(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
}

if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
  throw new Error('onnx builder: raw_data encoding assumes a little-endian host');
}

/** Serialises a ModelProto with one node; graph inputs are the non-initializer inputs. Returns the model bytes. */
export function buildSingleNodeModel(spec: SingleNodeModelSpec): Uint8Array {
  const domain = spec.domain ?? '';
  const opsets: Record<string, number> = { '': 21, 'com.microsoft': 1, ...(spec.opsets ?? {}) };
  const seen = new Set<string>();
  for (const v of [...spec.inputs, ...spec.outputs]) {
    if (!v || v.name === '') continue;
    if (seen.has(v.name)) throw new Error(`onnx builder: duplicate value name '${v.name}'`);
    seen.add(v.name);
  }

  const graph = new ProtoWriter(1 << 12);
  // GraphProto: node=1, name=2, initializer=5, input=11, output=12
  graph.message(1, (node) => {
    // NodeProto: input=1, output=2, name=3, op_type=4, attribute=5, domain=7
    for (const v of spec.inputs) node.string(1, v ? v.name : '');
    for (const v of spec.outputs) node.string(2, v.name);
    node.string(3, spec.nodeName ?? `${spec.opType}_0`);
    node.string(4, spec.opType);
    for (const [name, a] of Object.entries(spec.attributes ?? {})) {
      if (a === undefined) continue;
      node.message(5, (aw) => encodeAttribute(aw, name, a));
    }
    if (domain !== '') node.string(7, domain);
  });
  graph.string(2, spec.graphName ?? `${spec.opType}_graph`);
  for (const v of spec.inputs) {
    if (v && v.name !== '' && v.initializer) {
      const data = v.initializer;
      graph.message(5, (t) => encodeInitializer(t, v, data));
    }
  }
  for (const v of spec.inputs) {
    if (v && v.name !== '' && !v.initializer) graph.message(11, (vi) => encodeValueInfo(vi, v));
  }
  for (const v of spec.outputs) graph.message(12, (vi) => encodeValueInfo(vi, v));

  const model = new ProtoWriter(1 << 12);
  // ModelProto: ir_version=1, producer_name=2, graph=7, opset_import=8; OperatorSetIdProto: domain=1, version=2
  model.varint(1, spec.irVersion ?? 10);
  model.string(2, 'tessera');
  model.message(7, graph.finish());
  for (const [d, version] of Object.entries(opsets)) {
    model.message(8, (o) => {
      if (d !== '') o.string(1, d);
      o.varint(2, version);
    });
  }
  return model.finish();
}
