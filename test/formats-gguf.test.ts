import { mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gguf, GGUFValueType } from '@huggingface/gguf';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CorruptFileError, TruncatedFileError, UnsupportedFormatError } from '../src/formats/errors.ts';
import { openGguf } from '../src/formats/gguf.ts';
import { gv, writeGguf, type GgufTensorToWrite } from '../src/formats/gguf-writer.ts';
import { dequantize, GgmlType, quantize } from '../src/formats/quant/index.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tessera-gguf-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function ramp(n: number, scale = 0.01): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) * (1 + (i % 7)) * scale);
}

function tensors(): GgufTensorToWrite[] {
  const q = (type: number, shape: number[]) => ({ type, shape, data: quantize(type, ramp(shape.reduce((a, b) => a * b))) });
  return [
    { name: 'token_embd.weight', ...q(GgmlType.F32, [2, 3]) },
    { name: 'output_norm.weight', ...q(GgmlType.F16, [5]) },
    { name: 'blk.0.attn_q.weight', ...q(GgmlType.Q8_0, [2, 64]) },
    { name: 'blk.0.ffn_up.weight', ...q(GgmlType.Q4_K, [3, 256]) },
    { name: 'blk.0.ffn_down.weight', ...q(GgmlType.Q6_K, [2, 256]) },
    { name: 'blk.0.attn_norm.weight', ...q(GgmlType.BF16, [7]) },
  ];
}

const METADATA = {
  'general.architecture': 'llama',
  'general.name': 'tiny',
  'llama.block_count': gv.u32(1),
  'llama.rope.freq_base': gv.f32(10000.5),
  'llama.attention.layer_norm_rms_epsilon': 1e-5,
  'general.size': gv.u64(12345678901n),
  'general.flag': true,
  'tokenizer.ggml.tokens': ['a', 'b', 'c'],
  'tokenizer.ggml.scores': gv.arr(GGUFValueType.FLOAT32, [0, -1, -2]),
};

describe('writeGguf + @huggingface/gguf', () => {
  it('writes a file the reference parser reads', async () => {
    const file = join(dir, 'tiny.gguf');
    await writeGguf(file, METADATA, tensors());
    const parsed = await gguf(file, { allowLocalFile: true, typedMetadata: true });
    const md = parsed.metadata as Record<string, unknown>;
    expect(md.version).toBe(3);
    expect(md['general.architecture']).toBe('llama');
    expect(md['llama.block_count']).toBe(1);
    expect(md['llama.rope.freq_base']).toBe(10000.5);
    expect(md['llama.attention.layer_norm_rms_epsilon']).toBeCloseTo(1e-5, 10);
    expect(md['general.size']).toBe(12345678901n);
    expect(md['general.flag']).toBe(true);
    expect(md['tokenizer.ggml.tokens']).toEqual(['a', 'b', 'c']);
    expect(md['tokenizer.ggml.scores']).toEqual([0, -1, -2]);
    expect(parsed.typedMetadata['tokenizer.ggml.scores']?.subType).toBe(GGUFValueType.FLOAT32);
    expect(parsed.typedMetadata['llama.attention.layer_norm_rms_epsilon']?.type).toBe(GGUFValueType.FLOAT32);
    expect(parsed.tensorInfos.map((t) => [t.name, t.dtype, t.shape.map(Number)])).toEqual([
      ['token_embd.weight', 0, [3, 2]],
      ['output_norm.weight', 1, [5]],
      ['blk.0.attn_q.weight', 8, [64, 2]],
      ['blk.0.ffn_up.weight', 12, [256, 3]],
      ['blk.0.ffn_down.weight', 14, [256, 2]],
      ['blk.0.attn_norm.weight', 30, [7]],
    ]);
    expect(Number(parsed.tensorDataOffset) % 32).toBe(0);
    for (const t of parsed.tensorInfos) expect(Number(t.offset) % 32).toBe(0);
  });

  it('honours general.alignment', async () => {
    const file = join(dir, 'aligned.gguf');
    await writeGguf(file, { 'general.alignment': gv.u32(64) }, tensors());
    const g = await openGguf(file);
    expect(g.alignment).toBe(64);
    expect(g.dataOffset % 64).toBe(0);
    for (const t of g.tensors) expect(t.offset % 64).toBe(0);
  });
});

describe('openGguf', () => {
  it('reads raw blocks and dequantizes every supported type', async () => {
    const file = join(dir, 'tiny.gguf');
    const written = tensors();
    await writeGguf(file, METADATA, written);
    const g = await openGguf(file);
    expect(g.version).toBe(3);
    expect(g.metadata['general.name']).toBe('tiny');
    expect('version' in g.metadata).toBe(false);
    const up = g.info('blk.0.ffn_up.weight');
    expect(up).toMatchObject({ typeName: 'Q4_K', ne: [256, 3], shape: [3, 256], nElements: 768, byteSize: 3 * 144 });
    for (const t of written) {
      const raw = await g.readRaw(t.name);
      expect(raw).toEqual(t.data);
      const n = t.shape.reduce((a, b) => a * b);
      expect(Array.from(await g.toFloat32(t.name))).toEqual(Array.from(dequantize(t.type, t.data, n)));
    }
    // the F32 tensor comes back exactly
    expect(Array.from(await g.toFloat32('token_embd.weight'))).toEqual(Array.from(ramp(6)));
  });

  it('reports a truncated file naming the tensor past the end', async () => {
    const file = join(dir, 'cut.gguf');
    await writeGguf(file, METADATA, tensors());
    const g = await openGguf(file);
    const down = g.info('blk.0.ffn_down.weight');
    await truncate(file, down.offset + 100);
    const err = await openGguf(file).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TruncatedFileError);
    expect((err as TruncatedFileError).tensor).toBe('blk.0.ffn_down.weight');
    expect((err as Error).message).toContain(file);
  });

  it('reports a file cut inside its header (the parser would read zeros past the end)', async () => {
    const file = join(dir, 'cut-header.gguf');
    await writeGguf(file, METADATA, tensors());
    await truncate(file, 60);
    const err = await openGguf(file).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TruncatedFileError);
    expect((err as TruncatedFileError).field).toBe('header');
    expect((err as Error).message).toContain(file);
  });

  it('reads raw blocks of a type without a codec, and says so on dequantize', async () => {
    const file = join(dir, 'q5k.gguf');
    const data = new Uint8Array(176).map((_, i) => i);
    await writeGguf(file, {}, [{ name: 'w', type: GgmlType.Q5_K, shape: [256], data }]);
    const g = await openGguf(file);
    expect(await g.readRaw('w')).toEqual(data);
    await expect(g.toFloat32('w')).rejects.toThrow(UnsupportedFormatError);
    await expect(g.toFloat32('w')).rejects.toThrow(/tensor "w": cannot dequantize ggml type Q5_K/);
  });

  it('rejects a file that is not GGUF, naming it', async () => {
    const file = join(dir, 'junk.gguf');
    await writeFile(file, new Uint8Array(64).fill(7));
    const err = await openGguf(file).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptFileError);
    expect((err as Error).message).toContain(file);
  });

  it('rejects tensor data of the wrong size when writing', async () => {
    await expect(
      writeGguf(join(dir, 'x.gguf'), {}, [{ name: 'w', type: GgmlType.Q8_0, shape: [64], data: new Uint8Array(10) }]),
    ).rejects.toThrow(/tensor "w": 10 bytes given, Q8_0 \[64\] needs 68/);
    const bytes = await readFile(join(dir, 'x.gguf')).catch(() => undefined);
    expect(bytes).toBeUndefined();
  });
});
