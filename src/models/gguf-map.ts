/**
 * GGUF (llama.cpp) metadata and tensor names -> the HF config fields and tensor names the model builder reads.
 * Facts carried over from the GGUF convention: llama.cpp's converter permutes LLaMA q/k rows to the interleaved
 * RoPE pair order, and stores Gemma norm weights with the +1 already added.
 */
import { ModelConfigError, UnsupportedArchitectureError } from './errors.ts';

const ARCH_TO_HF: Record<string, string> = {
  llama: 'LlamaForCausalLM',
  qwen2: 'Qwen2ForCausalLM',
  qwen3: 'Qwen3ForCausalLM',
  gemma3: 'Gemma3ForCausalLM',
};

type Meta = Readonly<Record<string, unknown>>;

function get(meta: Meta, file: string, key: string, fallback?: unknown): unknown {
  const v = meta[key];
  if (v === undefined) {
    if (fallback !== undefined) return fallback;
    throw new ModelConfigError(file, key, 'required GGUF metadata key is missing');
  }
  return typeof v === 'bigint' ? Number(v) : v;
}

/** An HF-style config.json object built from GGUF metadata, plus how the GGUF differs from HF conventions. */
export function hfConfigFromGguf(meta: Meta, file: string): { config: Record<string, unknown>; ropeInterleaved: boolean; normsHaveOne: boolean } {
  const arch = String(get(meta, file, 'general.architecture'));
  const hf = ARCH_TO_HF[arch];
  if (!hf) throw new UnsupportedArchitectureError(file, `${arch} (GGUF general.architecture)`, Object.keys(ARCH_TO_HF));
  const k = (s: string) => `${arch}.${s}`;
  const heads = Number(get(meta, file, k('attention.head_count')));
  const hidden = Number(get(meta, file, k('embedding_length')));
  const tokens = meta['tokenizer.ggml.tokens'] as unknown[] | undefined;
  const vocab = Number(get(meta, file, k('vocab_size'), tokens?.length ?? undefined));
  const config: Record<string, unknown> = {
    architectures: [hf],
    hidden_size: hidden,
    num_hidden_layers: Number(get(meta, file, k('block_count'))),
    num_attention_heads: heads,
    num_key_value_heads: Number(get(meta, file, k('attention.head_count_kv'), heads)),
    head_dim: Number(get(meta, file, k('attention.key_length'), hidden / heads)),
    intermediate_size: Number(get(meta, file, k('feed_forward_length'))),
    vocab_size: vocab,
    max_position_embeddings: Number(get(meta, file, k('context_length'), 4096)),
    rms_norm_eps: Number(get(meta, file, k('attention.layer_norm_rms_epsilon'), 1e-6)),
    rope_theta: Number(get(meta, file, k('rope.freq_base'), 10000)),
    bos_token_id: meta['tokenizer.ggml.bos_token_id'] !== undefined ? Number(meta['tokenizer.ggml.bos_token_id']) : undefined,
    eos_token_id: meta['tokenizer.ggml.eos_token_id'] !== undefined ? Number(meta['tokenizer.ggml.eos_token_id']) : undefined,
  };
  const scaleType = meta[k('rope.scaling.type')];
  if (scaleType === 'linear') config.rope_scaling = { rope_type: 'linear', factor: Number(get(meta, file, k('rope.scaling.factor'))) };
  if (arch === 'gemma3') {
    config.sliding_window = Number(get(meta, file, k('attention.sliding_window'), 4096));
    config.query_pre_attn_scalar = Number(get(meta, file, k('attention.key_length'), 256));
    config.final_logit_softcapping = meta[k('final_logit_softcapping')];
    config.attn_logit_softcapping = meta[k('attn_logit_softcapping')];
    config.tie_word_embeddings = true;
  }
  return { config, ropeInterleaved: arch === 'llama', normsHaveOne: arch === 'gemma3' };
}

const LAYER_NAMES: Record<string, string> = {
  attn_norm: 'input_layernorm',
  attn_q: 'self_attn.q_proj',
  attn_k: 'self_attn.k_proj',
  attn_v: 'self_attn.v_proj',
  attn_output: 'self_attn.o_proj',
  attn_q_norm: 'self_attn.q_norm',
  attn_k_norm: 'self_attn.k_norm',
  ffn_gate: 'mlp.gate_proj',
  ffn_up: 'mlp.up_proj',
  ffn_down: 'mlp.down_proj',
  post_attention_norm: 'post_attention_layernorm',
  post_ffw_norm: 'post_feedforward_layernorm',
};

/** HF tensor name for a GGUF tensor name (undefined for tensors the decoder does not use, e.g. rope_freqs). */
export function hfTensorName(gguf: string, arch: string): string | undefined {
  if (gguf === 'token_embd.weight') return 'model.embed_tokens.weight';
  if (gguf === 'output_norm.weight') return 'model.norm.weight';
  if (gguf === 'output.weight') return 'lm_head.weight';
  const m = /^blk\.(\d+)\.([a-z_]+)\.(weight|bias)$/.exec(gguf);
  if (!m) return undefined;
  const [, layer, part, kind] = m;
  let hf = LAYER_NAMES[part!];
  // ffn_norm is the pre-MLP norm: HF calls it post_attention_layernorm in Llama/Qwen, pre_feedforward_layernorm in Gemma 3.
  if (part === 'ffn_norm') hf = arch === 'gemma3' ? 'pre_feedforward_layernorm' : 'post_attention_layernorm';
  return hf ? `model.layers.${layer}.${hf}.${kind}` : undefined;
}
