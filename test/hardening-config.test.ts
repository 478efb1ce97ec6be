/**
 * Config checks before anything is allocated from the config (issue 8, item 1): bounded sizes, positive finite
 * epsilons and RoPE bases, and a layer count that matches the layers in the weights. HF config.json and GGUF
 * metadata alike; errors name the file and the field (the GGUF key for GGUF files).
 */
import { describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GgmlType, gv, openCheckpoint, writeGguf, type GgufTensorToWrite } from '../src/formats/index.ts';
import { decoderConfigFromHF, SIZE_LIMITS } from '../src/models/config.ts';
import { LayerCountError, ModelConfigError } from '../src/models/errors.ts';
import { hfConfigFromGguf } from '../src/models/gguf-map.ts';
import { openModel } from '../src/models/load.ts';
import { tessera } from './helpers/cli.ts';

const FIXTURE = 'test/fixtures/hf/llama';
const baseConfig = (): Record<string, unknown> => JSON.parse(readFileSync(`${FIXTURE}/config.json`, 'utf8'));

/** A copy of the llama fixture with config.json edited. */
function folderWith(edit: (cfg: Record<string, unknown>) => void): { dir: string; cfgFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-hardening-'));
  cpSync(FIXTURE, dir, { recursive: true });
  const cfgFile = join(dir, 'config.json');
  const cfg = baseConfig();
  edit(cfg);
  writeFileSync(cfgFile, JSON.stringify(cfg));
  return { dir, cfgFile };
}

function configError(cfg: Record<string, unknown>): ModelConfigError {
  try {
    decoderConfigFromHF(cfg, 'cfg.json');
  } catch (e) {
    expect(e).toBeInstanceOf(ModelConfigError);
    return e as ModelConfigError;
  }
  throw new Error('expected a ModelConfigError');
}

describe('config.json sizes are bounded before anything is allocated', () => {
  it.each([1e9, 1e8, 2 ** 32, 0, -1, 1.5, '2', null])('num_hidden_layers %s fails in well under a second, naming the file and field', async (v) => {
    const { dir, cfgFile } = folderWith((c) => (c.num_hidden_layers = v));
    const t0 = performance.now();
    const err = await openModel(dir).catch((e: Error) => e);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(err).toBeInstanceOf(ModelConfigError);
    expect((err as Error).message).toMatch(new RegExp(`^${cfgFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: num_hidden_layers: (must be an integer from 1 to 1024, got|required field is missing)`));
  });

  it('every size field has an upper bound and refuses 0', () => {
    const fields = ['hidden_size', 'num_attention_heads', 'num_key_value_heads', 'head_dim', 'intermediate_size', 'vocab_size', 'max_position_embeddings', 'num_hidden_layers'] as const;
    for (const f of fields) {
      const [, max] = SIZE_LIMITS[f];
      for (const v of [max + 1, 2 ** 53, 0]) {
        const cfg = baseConfig();
        cfg[f] = v;
        expect(configError(cfg).message).toContain(`cfg.json: ${f}: must be an integer from 1 to ${max}, got ${v}`);
      }
    }
  });

  it.each([
    ['rms_norm_eps', -1],
    ['rms_norm_eps', 0],
    ['rms_norm_eps', 'x'],
    ['rope_theta', 0],
    ['rope_theta', -10000],
  ])('%s %s is refused (positive finite)', (field, v) => {
    const cfg = baseConfig();
    if (field === 'rope_theta') (cfg.rope_parameters as Record<string, unknown>).rope_theta = v;
    else cfg[field] = v;
    expect(configError(cfg).message).toMatch(new RegExp(`cfg\\.json: ${field}: must be (a positive finite number|a number)`));
  });

  it('RoPE scaling factors and Gemma 3 fields are checked too', () => {
    const cfg = baseConfig();
    (cfg.rope_parameters as Record<string, unknown>).factor = -8;
    expect(configError(cfg).message).toContain('rope_scaling.factor: must be a positive finite number, got -8');
    const gemma = JSON.parse(readFileSync('test/fixtures/hf/gemma3/config.json', 'utf8'));
    gemma.layer_types = gemma.layer_types.map(() => 'global');
    expect(configError(gemma).message).toContain('layer_types[0]: "global" is not "sliding_attention" or "full_attention"');
  });

  it('the shipped fixtures and default model still load their configs', async () => {
    for (const n of ['llama', 'qwen2', 'qwen3', 'gemma3']) expect((await openModel(`test/fixtures/hf/${n}`)).config.numLayers).toBeGreaterThan(0);
    expect((await openModel('models/default')).config.numLayers).toBeGreaterThan(0);
  });
});

describe('the layer count matches the layers in the weights', () => {
  it('a config with more layers than the weights names the first missing tensor', async () => {
    const { dir, cfgFile } = folderWith((c) => (c.num_hidden_layers = 3));
    const err = await openModel(dir).catch((e: Error) => e);
    expect(err).toBeInstanceOf(LayerCountError);
    expect((err as Error).message).toBe(
      `${cfgFile}: num_hidden_layers: is 3 but ${join(dir, 'model.safetensors')} has no layer 2 (first missing tensor: "model.layers.2.input_layernorm.weight"; the file holds 2 layers); set num_hidden_layers to match the weights`,
    );
  });

  it('extra layers in the file are an error too', async () => {
    const { dir, cfgFile } = folderWith((c) => (c.num_hidden_layers = 1));
    const err = await openModel(dir).catch((e: Error) => e);
    expect(err).toBeInstanceOf(LayerCountError);
    expect((err as Error).message).toContain(`${cfgFile}: num_hidden_layers: is 1 but`);
    expect((err as Error).message).toContain('holds layers up to model.layers.1 (1 layer beyond the config)');
  });
});

describe('GGUF metadata is checked under its own key names', () => {
  const meta = (over: Record<string, unknown>) => ({
    'general.architecture': 'llama',
    'llama.block_count': 2,
    'llama.embedding_length': 64,
    'llama.feed_forward_length': 128,
    'llama.attention.head_count': 4,
    'llama.vocab_size': 2048,
    ...over,
  });
  const ggufError = (over: Record<string, unknown>) => {
    try {
      hfConfigFromGguf(meta(over), 'm.gguf');
    } catch (e) {
      expect(e).toBeInstanceOf(ModelConfigError);
      return (e as Error).message;
    }
    throw new Error('expected a ModelConfigError');
  };

  it.each([
    [1e9, '1000000000'],
    [2n ** 32n, '4294967296'],
    [2n ** 64n - 1n, '18446744073709551615'],
    [0, '0'],
  ])('llama.block_count %s is refused, naming the key', (v, shown) => {
    expect(ggufError({ 'llama.block_count': v })).toBe(`m.gguf: llama.block_count: must be an integer from 1 to 1024, got ${shown}`);
  });

  it('other GGUF sizes and floats name their keys', () => {
    expect(ggufError({ 'llama.embedding_length': 1e6 })).toContain('m.gguf: llama.embedding_length: must be an integer from 1 to 65536');
    expect(ggufError({ 'llama.attention.head_count': 0 })).toContain('m.gguf: llama.attention.head_count: must be an integer from 1 to 1024, got 0');
    expect(ggufError({ 'llama.context_length': 2n ** 40n })).toContain('m.gguf: llama.context_length: must be an integer from 1 to 16777216');
    expect(ggufError({ 'llama.attention.layer_norm_rms_epsilon': -1 })).toContain('m.gguf: llama.attention.layer_norm_rms_epsilon: must be a positive finite number, got -1');
    expect(ggufError({ 'llama.rope.freq_base': 0 })).toContain('m.gguf: llama.rope.freq_base: must be a positive finite number, got 0');
    expect(ggufError({ 'tokenizer.ggml.eos_token_id': 5000 })).toContain('m.gguf: tokenizer.ggml.eos_token_id: must be an integer from 0 to 2047, got 5000');
    expect(hfConfigFromGguf(meta({}), 'm.gguf').config.num_hidden_layers).toBe(2);
  });

  it('a GGUF file with llama.block_count 1e9 fails at once, naming the file and key; a wrong count names the layers', async () => {
    const ck = await openCheckpoint(FIXTURE);
    const tensors: GgufTensorToWrite[] = [];
    for (const t of ck.tensors) {
      const name = t.name
        .replace('model.embed_tokens.weight', 'token_embd.weight')
        .replace('model.norm.weight', 'output_norm.weight')
        .replace('lm_head.weight', 'output.weight')
        .replace(/^model\.layers\.(\d+)\.input_layernorm/, 'blk.$1.attn_norm')
        .replace(/^model\.layers\.(\d+)\.post_attention_layernorm/, 'blk.$1.ffn_norm')
        .replace(/^model\.layers\.(\d+)\.self_attn\.([qkvo])_proj/, (_, l, p) => `blk.${l}.attn_${p === 'o' ? 'output' : p}`)
        .replace(/^model\.layers\.(\d+)\.mlp\.(gate|up|down)_proj/, 'blk.$1.ffn_$2');
      tensors.push({ name, type: GgmlType.F32, shape: [...t.shape], data: new Uint8Array((await ck.toFloat32(t.name)).buffer) });
    }
    const write = async (layers: number) => {
      const file = join(mkdtempSync(join(tmpdir(), 'tessera-gguf-')), 'm.gguf');
      await writeGguf(
        file,
        {
          'general.architecture': 'llama',
          'llama.block_count': gv.u32(layers),
          'llama.embedding_length': gv.u32(64),
          'llama.feed_forward_length': gv.u32(128),
          'llama.attention.head_count': gv.u32(4),
          'llama.attention.head_count_kv': gv.u32(2),
          'llama.vocab_size': gv.u32(2048),
        },
        tensors,
      );
      return file;
    };
    const big = await write(1e9);
    const t0 = performance.now();
    await expect(openModel(big)).rejects.toThrow(`${big}: llama.block_count: must be an integer from 1 to 1024, got 1000000000`);
    expect(performance.now() - t0).toBeLessThan(1000);
    const three = await write(3);
    await expect(openModel(three)).rejects.toThrow(`${three} (GGUF metadata): llama.block_count: is 3 but ${three} has no layer 2`);
    // No tokenizer.ggml.* metadata: the model opens without a tokenizer (ids only).
    const ok = await openModel(await write(2));
    expect(ok.tokenizer).toBeNull();
  });
});

describe('the CLI reports config problems in one line, exit 1', () => {
  it('num_hidden_layers 1e9 and rms_norm_eps -1', async () => {
    const a = folderWith((c) => (c.num_hidden_layers = 1e9));
    const r = await tessera('logits', '--model', a.dir, '--ids', '1,2,3');
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(`error: ${a.cfgFile}: num_hidden_layers: must be an integer from 1 to 1024, got 1000000000`);
    const b = folderWith((c) => (c.rms_norm_eps = -1));
    const g = await tessera('generate', '--model', b.dir, '--ids', '1,2,3', '--max-tokens', '2');
    expect(g.code).toBe(1);
    expect(g.stderr.trim()).toBe(`error: ${b.cfgFile}: rms_norm_eps: must be a positive finite number, got -1`);
  });
});
