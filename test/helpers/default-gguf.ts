/** models/default written as an F32 GGUF with the repo's GGUF writer (llama.cpp's names and metadata keys). */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GgmlType, openCheckpoint, writeGguf, gv, type GgufTensorToWrite } from '../../src/formats/index.ts';
import { tokenizerJsonToGgufMetadata } from '../../src/tokenizer/index.ts';

const DIR = new URL('../../models/default/', import.meta.url).pathname;

const LAYER: [RegExp, string][] = [
  [/^input_layernorm\.weight$/, 'attn_norm.weight'],
  [/^self_attn\.(q|k|v)_proj\.(weight|bias)$/, 'attn_$1.$2'],
  [/^self_attn\.o_proj\.(weight|bias)$/, 'attn_output.$1'],
  [/^self_attn\.(q|k)_norm\.weight$/, 'attn_$1_norm.weight'],
  [/^self_attn\.sinks$/, 'attn_sinks.weight'],
  [/^mlp\.(router|gate)\.(weight|bias)$/, 'ffn_gate_inp.$2'],
  [/^mlp\.(gate|up|down)_proj\.weight$/, 'ffn_$1.weight'],
];

/**
 * llama.cpp's name for an HF tensor (Llama / Qwen dense layers; the qwen3moe and gpt-oss router, sinks and biases;
 * stacked expert tensors excepted: writers restack them). gpt-oss calls the pre-MLP norm post_attention_norm.
 */
export function ggufName(hf: string, arch = 'llama'): string {
  if (hf === 'model.embed_tokens.weight') return 'token_embd.weight';
  if (hf === 'model.norm.weight') return 'output_norm.weight';
  if (hf === 'lm_head.weight') return 'output.weight';
  const m = /^model\.layers\.(\d+)\.(.*)$/.exec(hf);
  if (!m) throw new Error(`no GGUF name for ${hf}`);
  if (m[2] === 'post_attention_layernorm.weight') return `blk.${m[1]}.${arch === 'gpt-oss' ? 'post_attention_norm' : 'ffn_norm'}.weight`;
  for (const [re, to] of LAYER) if (re.test(m[2]!)) return `blk.${m[1]}.${m[2]!.replace(re, to)}`;
  throw new Error(`no GGUF name for ${hf}`);
}

/** llama.cpp's LLaMA conversion: within each head, row (j * D/2 + i) moves to (i * 2 + j). */
export function permuteRows(w: Float32Array, heads: number, cols: number): Float32Array {
  const D = w.length / cols / heads;
  const out = new Float32Array(w.length);
  for (let h = 0; h < heads; h++)
    for (let j = 0; j < 2; j++)
      for (let i = 0; i < D / 2; i++) out.set(w.subarray((h * D + j * (D / 2) + i) * cols, (h * D + j * (D / 2) + i + 1) * cols), (h * D + i * 2 + j) * cols);
  return out;
}

/** models/default as a GGUF in a new temporary folder (llama.cpp's names and metadata, q/k rows permuted as its converter does). */
export async function writeDefaultGguf(): Promise<string> {
  const cfg = JSON.parse(readFileSync(join(DIR, 'config.json'), 'utf8'));
  const ck = await openCheckpoint(DIR);
  const tensors: GgufTensorToWrite[] = [];
  for (const t of ck.tensors) {
    let x = await ck.toFloat32(t.name);
    const cols = t.shape[t.shape.length - 1]!;
    if (/q_proj\.weight$/.test(t.name)) x = permuteRows(x, cfg.num_attention_heads, cols);
    if (/k_proj\.weight$/.test(t.name)) x = permuteRows(x, cfg.num_key_value_heads, cols);
    tensors.push({ name: ggufName(t.name), type: GgmlType.F32, shape: [...t.shape], data: new Uint8Array(x.buffer) });
  }
  const tok = tokenizerJsonToGgufMetadata(JSON.parse(readFileSync(join(DIR, 'tokenizer.json'), 'utf8')), JSON.parse(readFileSync(join(DIR, 'tokenizer_config.json'), 'utf8')));
  const a = 'llama';
  const file = join(mkdtempSync(join(tmpdir(), 'tessera-web-gguf-')), 'default-f32.gguf');
  await writeGguf(
    file,
    {
      'general.architecture': a,
      'general.alignment': gv.u32(32),
      [`${a}.block_count`]: gv.u32(cfg.num_hidden_layers),
      [`${a}.embedding_length`]: gv.u32(cfg.hidden_size),
      [`${a}.feed_forward_length`]: gv.u32(cfg.intermediate_size),
      [`${a}.attention.head_count`]: gv.u32(cfg.num_attention_heads),
      [`${a}.attention.head_count_kv`]: gv.u32(cfg.num_key_value_heads),
      [`${a}.attention.key_length`]: gv.u32(cfg.head_dim),
      [`${a}.attention.value_length`]: gv.u32(cfg.head_dim),
      [`${a}.context_length`]: gv.u32(cfg.max_position_embeddings),
      [`${a}.rope.freq_base`]: gv.f32(cfg.rope_parameters?.rope_theta ?? 10000),
      [`${a}.attention.layer_norm_rms_epsilon`]: gv.f32(cfg.rms_norm_eps),
      ...tok,
    },
    tensors,
  );
  return file;
}

