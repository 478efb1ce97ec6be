/** The minimal protobuf encoder and the single-node ONNX builder used by the QMoE oracle. */
import { describe, expect, it } from 'vitest';
import { attr, buildSingleNodeModel } from '../src/onnx/build.ts';
import { runOnnxModel } from '../src/onnx/ort.ts';
import { ProtoWriter } from '../src/onnx/proto.ts';

const bytes = (w: ProtoWriter) => [...w.finish()];

describe('ProtoWriter', () => {
  it('encodes varints (protobuf documentation examples)', () => {
    expect(bytes(new ProtoWriter().varint(1, 150))).toEqual([0x08, 0x96, 0x01]);
    expect(bytes(new ProtoWriter().varint(1, 0))).toEqual([0x08, 0x00]);
    expect(bytes(new ProtoWriter().varint(1, 300n))).toEqual([0x08, 0xac, 0x02]);
    expect(bytes(new ProtoWriter().varint(20, 1))).toEqual([0xa0, 0x01, 0x01]); // tag 20<<3 = 160
    expect(bytes(new ProtoWriter().varint(1, true))).toEqual([0x08, 0x01]);
    // Negative int64: ten bytes of two's complement.
    expect(bytes(new ProtoWriter().varint(1, -1))).toEqual([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    expect(bytes(new ProtoWriter().varint(1, Number.MAX_SAFE_INTEGER))).toEqual([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f]);
  });

  it('encodes strings, floats and nested messages', () => {
    expect(bytes(new ProtoWriter().string(2, 'testing'))).toEqual([0x12, 0x07, 0x74, 0x65, 0x73, 0x74, 0x69, 0x6e, 0x67]);
    expect(bytes(new ProtoWriter().message(3, (m) => m.varint(1, 150)))).toEqual([0x1a, 0x03, 0x08, 0x96, 0x01]);
    expect(bytes(new ProtoWriter().float(2, 1))).toEqual([0x15, 0x00, 0x00, 0x80, 0x3f]);
    expect(bytes(new ProtoWriter().bytes(9, new Uint8Array(0)))).toEqual([0x4a, 0x00]);
    const big = new Uint8Array(200).fill(7);
    const out = new ProtoWriter(16).bytes(9, big).finish();
    expect([...out.subarray(0, 3)]).toEqual([0x4a, 0xc8, 0x01]);
    expect(out.length).toBe(203);
  });

  it('rejects bad field numbers and unsafe integers', () => {
    expect(() => new ProtoWriter().varint(0, 1)).toThrow(/bad field number 0/);
    expect(() => new ProtoWriter().varint(1, 2 ** 60)).toThrow(/not a safe integer/);
    expect(() => new ProtoWriter().varint(1, 1n << 64n)).toThrow(/out of 64-bit range/);
  });
});

describe('buildSingleNodeModel on ONNX Runtime', () => {
  it('runs a node with a graph input and an initializer', async () => {
    const model = buildSingleNodeModel({
      opType: 'Add',
      inputs: [
        { name: 'a', dtype: 'float32', shape: ['N', 3] },
        { name: 'b', dtype: 'float32', shape: [3], initializer: new Float32Array([10, 20, 30]) },
      ],
      outputs: [{ name: 'y', dtype: 'float32', shape: ['N', 3] }],
    });
    const out = await runOnnxModel(model, { a: { dtype: 'float32', shape: [2, 3], data: new Float32Array([1, 2, 3, 4, 5, 6]) } });
    expect(out['y']?.shape).toEqual([2, 3]);
    expect([...(out['y']!.data as Float32Array)]).toEqual([11, 22, 33, 14, 25, 36]);
  });

  it('encodes FLOAT, INT, INTS, STRING and FLOATS attributes', async () => {
    const x = { dtype: 'float32' as const, shape: [2, 3], data: new Float32Array([-1, 2, -3, 4, -5, 6]) };
    const leaky = buildSingleNodeModel({
      opType: 'LeakyRelu',
      inputs: [{ name: 'x', dtype: 'float32', shape: [2, 3] }],
      outputs: [{ name: 'y', dtype: 'float32', shape: [2, 3] }],
      attributes: { alpha: attr.float(0.25) },
    });
    expect([...((await runOnnxModel(leaky, { x }))['y']!.data as Float32Array)]).toEqual([-0.25, 2, -0.75, 4, -1.25, 6]);

    const transpose = buildSingleNodeModel({
      opType: 'Transpose',
      inputs: [{ name: 'x', dtype: 'float32', shape: [2, 3] }],
      outputs: [{ name: 'y', dtype: 'float32', shape: [3, 2] }],
      attributes: { perm: attr.ints([1, 0]) },
    });
    const t = (await runOnnxModel(transpose, { x }))['y']!;
    expect(t.shape).toEqual([3, 2]);
    expect([...(t.data as Float32Array)]).toEqual([-1, 4, 2, -5, -3, 6]);

    const gather = buildSingleNodeModel({
      opType: 'Gather',
      inputs: [
        { name: 'x', dtype: 'float32', shape: [2, 3] },
        { name: 'i', dtype: 'int64', shape: [2], initializer: new BigInt64Array([2n, -3n]) },
      ],
      outputs: [{ name: 'y', dtype: 'float32', shape: [2, 2] }],
      attributes: { axis: attr.int(1) },
    });
    expect([...((await runOnnxModel(gather, { x }))['y']!.data as Float32Array)]).toEqual([-3, -1, 6, 4]);

    const pad = buildSingleNodeModel({
      opType: 'Pad',
      inputs: [
        { name: 'x', dtype: 'float32', shape: [2, 3] },
        { name: 'pads', dtype: 'int64', shape: [4], initializer: new BigInt64Array([0n, 1n, 0n, 1n]) },
      ],
      outputs: [{ name: 'y', dtype: 'float32', shape: [2, 5] }],
      attributes: { mode: 'reflect' },
    });
    expect([...((await runOnnxModel(pad, { x }))['y']!.data as Float32Array)]).toEqual([2, -1, 2, -3, 2, -5, 4, -5, 6, -5]);

    const constant = buildSingleNodeModel({
      opType: 'Constant',
      inputs: [],
      outputs: [{ name: 'y', dtype: 'float32', shape: [3] }],
      attributes: { value_floats: attr.floats([1.5, -2, 0.125]) },
    });
    expect([...((await runOnnxModel(constant, {}))['y']!.data as Float32Array)]).toEqual([1.5, -2, 0.125]);
  });

  it('keeps positions of omitted optional inputs', async () => {
    const clip = buildSingleNodeModel({
      opType: 'Clip',
      inputs: [
        { name: 'x', dtype: 'float32', shape: [4] },
        null, // min omitted
        { name: 'max', dtype: 'float32', shape: [], initializer: new Float32Array([1]) },
      ],
      outputs: [{ name: 'y', dtype: 'float32', shape: [4] }],
    });
    const out = await runOnnxModel(clip, { x: { dtype: 'float32', shape: [4], data: new Float32Array([-5, 0.5, 1, 7]) } });
    expect([...(out['y']!.data as Float32Array)]).toEqual([-5, 0.5, 1, 1]);
  });

  it('reports bad specs with the value name', () => {
    const base = { opType: 'Identity', outputs: [{ name: 'y', dtype: 'float32' as const, shape: [2] }] };
    expect(() =>
      buildSingleNodeModel({ ...base, inputs: [{ name: 'x', dtype: 'float32', shape: [2], initializer: new Uint8Array(2) }] }),
    ).toThrow(/initializer x: dtype float32 needs Float32Array, got Uint8Array/);
    expect(() =>
      buildSingleNodeModel({ ...base, inputs: [{ name: 'x', dtype: 'float32', shape: [3], initializer: new Float32Array(2) }] }),
    ).toThrow(/initializer x: shape \[3\] needs 3 elements, got 2/);
    expect(() => buildSingleNodeModel({ ...base, inputs: [{ name: 'y', dtype: 'float32', shape: [2] }] })).toThrow(/duplicate value name 'y'/);
    expect(() =>
      buildSingleNodeModel({ ...base, inputs: [{ name: 'x', dtype: 'float32', shape: [2] }], attributes: { n: attr.int(1.5) } }),
    ).toThrow(/attribute n: int attribute has non-integer value 1.5/);
  });

  it('surfaces ORT errors with the failing stage', async () => {
    const bad = buildSingleNodeModel({
      opType: 'NoSuchOp',
      domain: 'com.microsoft',
      inputs: [{ name: 'x', dtype: 'float32', shape: [1] }],
      outputs: [{ name: 'y', dtype: 'float32', shape: [1] }],
    });
    await expect(runOnnxModel(bad, { x: { dtype: 'float32', shape: [1], data: new Float32Array(1) } })).rejects.toThrow(
      /onnxruntime: session creation failed: .*NoSuchOp/,
    );
  });
});
