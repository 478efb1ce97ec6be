/**
 * Fuzz: the safetensors header reader and the GGUF reader (with the model config and tokenizer built from GGUF
 * metadata) never crash and throw only the project's named errors, over mutations of the shipped files: byte flips,
 * huge numbers written into lengths/counts/offsets, truncations, insertions, deletions.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { GGUFValueType } from '@huggingface/gguf';
import { FormatError, GgmlType, gv, parseGgufBytes, parseSafetensorsBytes, quantizeQ4_K, quantizeQ8_0, serializeGguf, f32ToF16Bytes } from '../src/formats/index.ts';
import { decoderConfigFromHF } from '../src/models/config.ts';
import { ModelConfigError, UnsupportedArchitectureError } from '../src/models/errors.ts';
import { hfConfigFromGguf } from '../src/models/gguf-map.ts';
import { tokenizerFromGguf, tokenizerJsonToGgufMetadata } from '../src/tokenizer/index.ts';
import { tinyTokenizer } from './fixtures/formats/tiny-bpe.ts';
import { byteMutations, expectOnly, expectOnlyAsync, mutateBytes } from './helpers/fuzz.ts';

const NAMED = [FormatError, ModelConfigError, UnsupportedArchitectureError];
const SAFETENSORS = ['llama', 'qwen2', 'qwen3', 'gemma3'].map((n) => `test/fixtures/hf/${n}/model.safetensors`).concat('models/default/model.safetensors');

/** The header bytes (8-byte length + JSON) of a safetensors file, and the file's size. */
function headerOf(file: string): { bytes: Uint8Array; size: number } {
  const all = readFileSync(file);
  const n = Number(new DataView(all.buffer, all.byteOffset, 8).getBigUint64(0, true));
  return { bytes: new Uint8Array(all.subarray(0, 8 + n)), size: all.length };
}

describe('fuzz: safetensors header reader', () => {
  const seeds = SAFETENSORS.map(headerOf);

  it('the unmutated shipped files parse', () => {
    for (const [i, s] of seeds.entries()) expect(parseSafetensorsBytes(SAFETENSORS[i]!, s.bytes, s.size).tensors.length).toBeGreaterThan(0);
  });

  it('12,000 mutated headers: only named errors', () => {
    let ok = 0;
    fc.assert(
      fc.property(fc.nat({ max: seeds.length - 1 }), byteMutations, fc.boolean(), (i, muts, sizeToo) => {
        const s = seeds[i]!;
        const bytes = mutateBytes(s.bytes, muts);
        // Sometimes the file size shrinks too (a truncated download).
        const size = sizeToo ? Math.min(s.size, bytes.length + (muts[0]!.value % 4096)) : s.size - s.bytes.length + bytes.length;
        expectOnly(NAMED, () => {
          parseSafetensorsBytes('fuzz.safetensors', bytes, size);
          ok++;
        });
      }),
      { numRuns: 12_000 },
    );
    expect(ok).toBeGreaterThan(0);
  });

  it('2,000 generated headers (random JSON, hostile shapes and offsets): only named errors', () => {
    const entry = fc.record(
      {
        dtype: fc.oneof(fc.constantFrom('F32', 'F16', 'BF16', 'I8', 'BOOL', 'F8_E4M3', 'X'), fc.jsonValue({ maxDepth: 1 })),
        shape: fc.oneof(fc.array(fc.oneof(fc.nat(), fc.constantFrom(2 ** 32, 2 ** 53, -1, 1.5, 1e308)), { maxLength: 5 }), fc.jsonValue({ maxDepth: 1 })),
        data_offsets: fc.oneof(fc.tuple(fc.nat(), fc.nat()), fc.array(fc.oneof(fc.integer(), fc.double()), { maxLength: 3 }), fc.jsonValue({ maxDepth: 1 })),
      },
      { requiredKeys: [] },
    );
    const header = fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('__metadata__', '__proto__', 'constructor')), fc.oneof(entry, fc.jsonValue({ maxDepth: 2 })), { maxKeys: 6 });
    fc.assert(
      fc.property(header, fc.nat({ max: 1 << 20 }), (h, extra) => {
        const json = new TextEncoder().encode(JSON.stringify(h));
        const bytes = new Uint8Array(8 + json.length);
        new DataView(bytes.buffer).setBigUint64(0, BigInt(json.length), true);
        bytes.set(json, 8);
        expectOnly(NAMED, () => parseSafetensorsBytes('gen.safetensors', bytes, bytes.length + extra));
      }),
      { numRuns: 2_000 },
    );
  });
});

/** A small GGUF with real structure: llama metadata, a tiny BPE vocabulary (optional), F32/F16/Q8_0/Q4_K tensors. */
function tinyGguf(vocab: boolean): Uint8Array {
  const { json, config } = tinyTokenizer();
  const x = Float32Array.from({ length: 256 * 2 }, (_, i) => Math.sin(i));
  return serializeGguf(
    {
      'general.architecture': 'llama',
      'general.alignment': gv.u32(32),
      'llama.block_count': gv.u32(1),
      'llama.embedding_length': gv.u32(256),
      'llama.feed_forward_length': gv.u32(512),
      'llama.attention.head_count': gv.u32(4),
      'llama.attention.head_count_kv': gv.u32(2),
      'llama.context_length': gv.u32(128),
      'llama.rope.freq_base': gv.f32(10000),
      'llama.attention.layer_norm_rms_epsilon': gv.f32(1e-5),
      'llama.rope.scaling.type': gv.str('linear'),
      'llama.rope.scaling.factor': gv.f32(2),
      'general.list': gv.arr(GGUFValueType.UINT64, [1n, 2n]),
      'llama.vocab_size': gv.u32(300),
      ...(vocab ? tokenizerJsonToGgufMetadata(json, config) : {}),
    },
    [
      { name: 'token_embd.weight', type: GgmlType.F32, shape: [2, 256], data: new Uint8Array(x.buffer) },
      { name: 'blk.0.attn_norm.weight', type: GgmlType.F16, shape: [256], data: f32ToF16Bytes(x.subarray(0, 256)) },
      { name: 'blk.0.attn_q.weight', type: GgmlType.Q8_0, shape: [2, 256], data: quantizeQ8_0(x) },
      { name: 'blk.0.ffn_up.weight', type: GgmlType.Q4_K, shape: [2, 256], data: quantizeQ4_K(x) },
    ],
  );
}

/** The qwen3 fixture as GGUF (its real tokenizer in the metadata, F32 tensors), built once. */
function fixtureGguf(): Uint8Array {
  const dir = 'test/fixtures/hf/qwen3';
  const cfg = JSON.parse(readFileSync(`${dir}/config.json`, 'utf8'));
  const tok = tokenizerJsonToGgufMetadata(JSON.parse(readFileSync(`${dir}/tokenizer.json`, 'utf8')), JSON.parse(readFileSync(`${dir}/tokenizer_config.json`, 'utf8')));
  const x = new Float32Array(cfg.hidden_size);
  return serializeGguf(
    {
      'general.architecture': 'qwen3',
      'qwen3.block_count': gv.u32(cfg.num_hidden_layers),
      'qwen3.embedding_length': gv.u32(cfg.hidden_size),
      'qwen3.feed_forward_length': gv.u32(cfg.intermediate_size),
      'qwen3.attention.head_count': gv.u32(cfg.num_attention_heads),
      'qwen3.attention.head_count_kv': gv.u32(cfg.num_key_value_heads),
      'qwen3.attention.key_length': gv.u32(cfg.head_dim),
      'qwen3.context_length': gv.u32(cfg.max_position_embeddings),
      ...tok,
    },
    [{ name: 'output_norm.weight', type: GgmlType.F32, shape: [cfg.hidden_size], data: new Uint8Array(x.buffer) }],
  );
}

/** Everything a GGUF model load reads before touching the GPU: header, tensor table, config, tokenizer, one tensor. */
async function readAll(bytes: Uint8Array, withTokenizer = true): Promise<void> {
  const g = await parseGgufBytes('fuzz.gguf', bytes);
  const t = g.tensors[0];
  if (t && t.byteSize < 1 << 20) await g.toFloat32(t.name);
  const { config } = hfConfigFromGguf(g.metadata as Record<string, unknown>, 'fuzz.gguf');
  decoderConfigFromHF(config, 'fuzz.gguf (GGUF metadata)');
  if (withTokenizer && g.metadata['tokenizer.ggml.tokens'] !== undefined) tokenizerFromGguf(g.metadata as never, { origin: 'fuzz.gguf' }).encode('Hello world 12345');
}

describe('fuzz: GGUF reader (header, tensor table, config and tokenizer from metadata)', () => {
  const bare = tinyGguf(false);
  const tiny = tinyGguf(true);
  const fixture = fixtureGguf();
  // The metadata and tensor infos: where mutations matter (the rest is tensor data).
  const headerLen = (b: Uint8Array) => b.length - 3400;

  it('the unmutated files read completely', async () => {
    await readAll(bare);
    await readAll(tiny);
    const g = await parseGgufBytes('fixture.gguf', fixture);
    expect(g.metadata['tokenizer.ggml.tokens']).toHaveLength(2048);
  });

  // 8,000 + 2,000 + 400 = 10,400 mutated GGUF files in all.
  it('8,000 mutations of a small GGUF (model metadata, F32/F16/Q8_0/Q4_K tensors): only named errors', async () => {
    let ok = 0;
    await fc.assert(
      fc.asyncProperty(byteMutations, fc.boolean(), async (muts, anywhere) => {
        const bytes = mutateBytes(bare, muts, anywhere ? undefined : headerLen(bare));
        await expectOnlyAsync(NAMED, async () => {
          await readAll(bytes);
          ok++;
        });
      }),
      { numRuns: 8_000 },
    );
    expect(ok).toBeGreaterThan(0);
  });

  it('2,000 mutations of a small GGUF with a BPE vocabulary (tokenizer built from the metadata): only named errors', async () => {
    await fc.assert(
      fc.asyncProperty(byteMutations, async (muts) => {
        const bytes = mutateBytes(tiny, muts, headerLen(tiny));
        await expectOnlyAsync(NAMED, () => readAll(bytes, muts[0]!.value % 4 === 0));
      }),
      { numRuns: 2_000 },
    );
  });

  it('400 mutations of the qwen3 fixture as GGUF (real 2048-token vocabulary): only named errors', async () => {
    await fc.assert(
      fc.asyncProperty(byteMutations, async (muts) => {
        // Mostly the first KiB (counts, key lengths, the start of the vocabulary), where lengths live.
        const bytes = mutateBytes(fixture, muts, muts[0]!.value % 4 ? 1024 : fixture.length);
        await expectOnlyAsync(NAMED, () => parseGgufBytes('fixture.gguf', bytes));
      }),
      { numRuns: 400 },
    );
  });
});

describe('GGUF inputs the fuzzer found', () => {
  it('a scalar (0-dim) block-quantized tensor is a CorruptFileError, not a RangeError', async () => {
    const bytes = serializeGguf({ 'general.architecture': 'llama' }, [{ name: 'x', type: GgmlType.F32, shape: [], data: new Uint8Array(4) }]);
    // Retype the tensor as Q8_0 (type id at 8 bytes before the end of the tensor info: name, n_dims=0, type, offset).
    const dv = new DataView(bytes.buffer);
    const at = bytes.indexOf(0x78 /* "x" */, 24) + 1 + 4;
    dv.setUint32(at, GgmlType.Q8_0, true);
    await expect(parseGgufBytes('scalar.gguf', bytes)).rejects.toThrow(/tensor "x": row length ne\[0\] = 1 is not a multiple of the Q8_0 block size 32/);
  });

  it('a few bytes claiming millions of tensors are refused at once (the parser would walk them for seconds)', async () => {
    const bytes = new Uint8Array(24);
    bytes.set([0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0]);
    new DataView(bytes.buffer).setBigUint64(8, 9_999_999n, true);
    for (const input of [bytes, bytes.subarray(0, 11)]) {
      const t0 = performance.now();
      await expect(parseGgufBytes('counts.gguf', input)).rejects.toThrow(/declares \d+ tensors and 0 metadata entries, which need at least \d+ bytes, but the file has (24|11)/);
      expect(performance.now() - t0).toBeLessThan(200);
    }
  });
});
