import { mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openCheckpoint } from '../src/formats/checkpoint.ts';
import { CorruptFileError, MissingFileError, TensorNotFoundError, TruncatedFileError, UnsupportedFormatError } from '../src/formats/errors.ts';
import { f32ToBf16Bytes, f32ToF16Bytes } from '../src/formats/f16.ts';
import { readSafetensorsHeader, writeSafetensors, type TensorToWrite } from '../src/formats/safetensors.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tessera-st-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const f32 = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);

function sample(): TensorToWrite[] {
  return [
    { name: 'model.embed.weight', dtype: 'F32', shape: [2, 3], data: f32([1, 2, 3, 4, 5, 6]) },
    { name: 'model.norm.weight', dtype: 'F16', shape: [4], data: f32ToF16Bytes([0.5, -1, 2, 65504]) },
    { name: 'lm_head.weight', dtype: 'BF16', shape: [2, 2], data: f32ToBf16Bytes([1, -2, 0.5, 3]) },
    { name: 'positions', dtype: 'I64', shape: [2], data: new Uint8Array(new BigInt64Array([7n, -1n]).buffer) },
  ];
}

/** Write a file whose header is `header` (raw JSON) followed by `data`. */
async function writeRaw(file: string, header: unknown, data: Uint8Array): Promise<void> {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.byteLength + data.byteLength);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.byteLength), true);
  out.set(json, 8);
  out.set(data, 8 + json.byteLength);
  await writeFile(file, out);
}

describe('safetensors writer', () => {
  it('writes the documented layout', async () => {
    const file = join(dir, 'model.safetensors');
    await writeSafetensors(file, sample(), { format: 'pt' });
    const bytes = await readFile(file);
    const n = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
    expect(n % 8).toBe(0);
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
    expect(header.__metadata__).toEqual({ format: 'pt' });
    expect(header['model.embed.weight']).toEqual({ dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] });
    expect(header['model.norm.weight'].data_offsets).toEqual([24, 32]);
    expect(bytes.byteLength).toBe(8 + n + 24 + 8 + 8 + 16);
    expect(new Float32Array(bytes.buffer.slice(bytes.byteOffset + 8 + n, bytes.byteOffset + 8 + n + 24))).toEqual(
      new Float32Array([1, 2, 3, 4, 5, 6]),
    );
  });
});

describe('openCheckpoint (single file)', () => {
  it('lists tensors and reads them on demand', async () => {
    await writeSafetensors(join(dir, 'model.safetensors'), sample());
    const ckpt = await openCheckpoint(dir);
    expect(ckpt.tensors).toEqual([
      { name: 'model.embed.weight', dtype: 'F32', shape: [2, 3] },
      { name: 'model.norm.weight', dtype: 'F16', shape: [4] },
      { name: 'lm_head.weight', dtype: 'BF16', shape: [2, 2] },
      { name: 'positions', dtype: 'I64', shape: [2] },
    ]);
    const pos = await ckpt.read('positions');
    expect(pos.dtype).toBe('I64');
    expect(Array.from(new BigInt64Array(pos.data.slice().buffer))).toEqual([7n, -1n]);
    expect(Array.from(await ckpt.toFloat32('model.embed.weight'))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(Array.from(await ckpt.toFloat32('model.norm.weight'))).toEqual([0.5, -1, 2, 65504]);
    expect(Array.from(await ckpt.toFloat32('lm_head.weight'))).toEqual([1, -2, 0.5, 3]);
  });

  it('names a missing tensor and suggests similar names', async () => {
    await writeSafetensors(join(dir, 'model.safetensors'), sample());
    const ckpt = await openCheckpoint(dir);
    await expect(ckpt.read('model.layers.0.norm.weight')).rejects.toThrow(TensorNotFoundError);
    await expect(ckpt.read('model.layers.0.norm.weight')).rejects.toThrow(/tensor "model.layers.0.norm.weight".*model.norm.weight/);
    await expect(ckpt.toFloat32('positions')).rejects.toThrow(UnsupportedFormatError);
    await expect(ckpt.toFloat32('positions')).rejects.toThrow(/tensor "positions": dtype I64/);
  });

  it('fails on a truncated file, naming the first tensor past the end', async () => {
    const file = join(dir, 'model.safetensors');
    await writeSafetensors(file, sample());
    const { dataStart } = await readSafetensorsHeader(file);
    await truncate(file, dataStart + 24 + 3); // cuts into model.norm.weight (bytes 24..32)
    const err = await openCheckpoint(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TruncatedFileError);
    expect((err as TruncatedFileError).file).toBe(file);
    expect((err as TruncatedFileError).tensor).toBe('model.norm.weight');
    expect((err as Error).message).toContain(file);
    expect((err as Error).message).toMatch(/tensor "model.norm.weight".*truncated/);
  });

  it('rejects a header length past the end of the file', async () => {
    const file = join(dir, 'bad.safetensors');
    const bytes = new Uint8Array(20);
    new DataView(bytes.buffer).setBigUint64(0, 1000n, true);
    await writeFile(file, bytes);
    await expect(openCheckpoint(file)).rejects.toThrow(TruncatedFileError);
    await expect(openCheckpoint(file)).rejects.toThrow(/header length.*1000 bytes does not fit/);
  });

  it('rejects malformed JSON, unknown dtypes, inconsistent offsets and overlaps', async () => {
    const file = join(dir, 'bad.safetensors');
    const json = new TextEncoder().encode('{"a": ');
    const raw = new Uint8Array(8 + json.byteLength);
    new DataView(raw.buffer).setBigUint64(0, BigInt(json.byteLength), true);
    raw.set(json, 8);
    await writeFile(file, raw);
    await expect(openCheckpoint(file)).rejects.toThrow(CorruptFileError);

    await writeRaw(file, { w: { dtype: 'F7', shape: [1], data_offsets: [0, 4] } }, new Uint8Array(4));
    await expect(openCheckpoint(file)).rejects.toThrow(/tensor "w": field "dtype": unknown dtype "F7"/);

    await writeRaw(file, { w: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 12] } }, new Uint8Array(16));
    await expect(openCheckpoint(file)).rejects.toThrow(/tensor "w": field "data_offsets": spans 12 bytes but shape \[2,2\] of F32 needs 16/);

    await writeRaw(
      file,
      { a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } },
      new Uint8Array(12),
    );
    await expect(openCheckpoint(file)).rejects.toThrow(/tensor "b".*overlaps tensor "a"/);
  });
});

describe('openCheckpoint (sharded)', () => {
  async function writeShards(): Promise<void> {
    const [a, b, c, d] = sample();
    await writeSafetensors(join(dir, 'model-00001-of-00002.safetensors'), [a!, b!]);
    await writeSafetensors(join(dir, 'model-00002-of-00002.safetensors'), [c!, d!]);
    const weight_map = {
      'model.embed.weight': 'model-00001-of-00002.safetensors',
      'model.norm.weight': 'model-00001-of-00002.safetensors',
      'lm_head.weight': 'model-00002-of-00002.safetensors',
      positions: 'model-00002-of-00002.safetensors',
    };
    await writeFile(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: { total_size: 56 }, weight_map }));
  }

  it('reads tensors across shards', async () => {
    await writeShards();
    const ckpt = await openCheckpoint(dir);
    expect(ckpt.files.map((f) => f.slice(dir.length + 1))).toEqual([
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
    ]);
    expect(ckpt.tensors.map((t) => t.name)).toEqual(['model.embed.weight', 'model.norm.weight', 'lm_head.weight', 'positions']);
    expect(ckpt.metadata.total_size).toBe('56');
    expect(Array.from(await ckpt.toFloat32('lm_head.weight'))).toEqual([1, -2, 0.5, 3]);
    expect(Array.from(await ckpt.toFloat32('model.embed.weight'))).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('names a missing shard and a tensor that needs it', async () => {
    await writeShards();
    await rm(join(dir, 'model-00002-of-00002.safetensors'));
    const err = await openCheckpoint(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingFileError);
    expect((err as Error).message).toContain('model-00002-of-00002.safetensors');
    expect((err as Error).message).toContain('lm_head.weight');
  });

  it('names a tensor listed in the index but absent from its shard', async () => {
    await writeShards();
    const index = JSON.parse(await readFile(join(dir, 'model.safetensors.index.json'), 'utf8'));
    index.weight_map['model.layers.0.mlp.weight'] = 'model-00001-of-00002.safetensors';
    await writeFile(join(dir, 'model.safetensors.index.json'), JSON.stringify(index));
    const err = await openCheckpoint(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TensorNotFoundError);
    expect((err as TensorNotFoundError).tensor).toBe('model.layers.0.mlp.weight');
    expect((err as Error).message).toContain('model-00001-of-00002.safetensors');
  });

  it('reports an empty directory', async () => {
    await expect(openCheckpoint(dir)).rejects.toThrow(/no model.safetensors, model.safetensors.index.json/);
  });
});
