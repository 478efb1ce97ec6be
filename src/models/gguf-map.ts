/**
 * GGUF (llama.cpp) metadata and tensor names -> the HF config fields and tensor names the model builder reads.
 * Facts carried over from the GGUF convention: llama.cpp's converter permutes LLaMA q/k rows to the interleaved
 * RoPE pair order, and stores Gemma norm weights with the +1 already added.
 */
import { checkPositive, checkSize, SIZE_LIMITS, type SizeField } from './config.ts';
import { ModelConfigError, UnsupportedArchitectureError } from './errors.ts';

const ARCH_TO_HF: Record<string, string> = {
  llama: 'LlamaForCausalLM',
  qwen2: 'Qwen2ForCausalLM',
  qwen3: 'Qwen3ForCausalLM',
  gemma3: 'Gemma3ForCausalLM',
  qwen3moe: 'Qwen3MoeForCausalLM',
  'gpt-oss': 'GptOssForCausalLM',
};

type Meta = Readonly<Record<string, unknown>>;

function get(meta: Meta, file: string, key: string, fallback?: unknown): unknown {
  const v = meta[key];
  if (v === undefined) {
    if (fallback !== undefined) return fallback;
    throw new ModelConfigError(file, key, 'required GGUF metadata key is missing');
  }
  return v;
}

/**
 * An HF-style config.json object built from GGUF metadata, plus how the GGUF differs from HF conventions. With the
 * file's tensor names, a qwen3moe layer without a router (`blk.N.ffn_gate_inp.weight`) is a dense MLP layer
 * (HF's mlp_only_layers); without them every layer is routed, as llama.cpp's qwen3moe graph assumes.
 */
export function hfConfigFromGguf(meta: Meta, file: string, tensorNames?: readonly string[]): { config: Record<string, unknown>; ropeInterleaved: boolean; normsHaveOne: boolean } {
  const arch = String(get(meta, file, 'general.architecture'));
  const hf = Object.hasOwn(ARCH_TO_HF, arch) ? ARCH_TO_HF[arch] : undefined;
  if (!hf) throw new UnsupportedArchitectureError(file, `${arch} (GGUF general.architecture)`, Object.keys(ARCH_TO_HF));
  const k = (s: string) => `${arch}.${s}`;
  // Sizes and floats are checked here, under their GGUF key names, before anything is built from them.
  const sz = (key: string, field: SizeField, fallback?: unknown) => checkSize(file, key, get(meta, file, key, fallback), SIZE_LIMITS[field]);
  const pos = (key: string, fallback?: number) => checkPositive(file, key, get(meta, file, key, fallback));
  const heads = sz(k('attention.head_count'), 'num_attention_heads');
  const hidden = sz(k('embedding_length'), 'hidden_size');
  const tokens = meta['tokenizer.ggml.tokens'];
  const vocab = sz(k('vocab_size'), 'vocab_size', Array.isArray(tokens) ? tokens.length : undefined);
  const keyLength = meta[k('attention.key_length')];
  if (keyLength === undefined && hidden % heads !== 0) {
    throw new ModelConfigError(file, k('attention.key_length'), `missing, and ${k('embedding_length')} ${hidden} is not a multiple of ${k('attention.head_count')} ${heads}`);
  }
  const headDim = sz(k('attention.key_length'), 'head_dim', hidden / heads);
  const id = (key: string) => (meta[key] === undefined ? undefined : checkSize(file, key, meta[key], [0, vocab - 1]));
  const config: Record<string, unknown> = {
    architectures: [hf],
    hidden_size: hidden,
    num_hidden_layers: sz(k('block_count'), 'num_hidden_layers'),
    num_attention_heads: heads,
    num_key_value_heads: sz(k('attention.head_count_kv'), 'num_key_value_heads', heads),
    head_dim: headDim,
    // MoE files may carry only the expert width
    intermediate_size: sz(k('feed_forward_length'), 'intermediate_size', meta[k('expert_feed_forward_length')]),
    vocab_size: vocab,
    max_position_embeddings: sz(k('context_length'), 'max_position_embeddings', 4096),
    rms_norm_eps: pos(k('attention.layer_norm_rms_epsilon'), 1e-6),
    rope_theta: pos(k('rope.freq_base'), 10000),
    bos_token_id: id('tokenizer.ggml.bos_token_id'),
    eos_token_id: id('tokenizer.ggml.eos_token_id'),
  };
  const scaleType = meta[k('rope.scaling.type')];
  if (scaleType === 'linear') config.rope_scaling = { rope_type: 'linear', factor: pos(k('rope.scaling.factor')) };
  if (scaleType === 'yarn') {
    config.rope_scaling = {
      rope_type: 'yarn',
      factor: pos(k('rope.scaling.factor')),
      original_max_position_embeddings: sz(k('rope.scaling.original_context_length'), 'original_max_position_embeddings'),
      // llama.cpp's defaults; gpt-oss (the one YaRN model mapped here) does not floor/ceil the ramp bounds in transformers
      beta_fast: 32,
      beta_slow: 1,
      truncate: arch !== 'gpt-oss',
    };
  }
  if (arch === 'qwen3moe' || arch === 'gpt-oss') {
    const experts = sz(k('expert_count'), arch === 'qwen3moe' ? 'num_experts' : 'num_local_experts');
    config[arch === 'qwen3moe' ? 'num_experts' : 'num_local_experts'] = experts;
    config.num_experts_per_tok = checkSize(file, k('expert_used_count'), get(meta, file, k('expert_used_count')), [1, experts]);
    const ffExp = sz(k('expert_feed_forward_length'), 'moe_intermediate_size');
    if (arch === 'qwen3moe') {
      config.moe_intermediate_size = ffExp;
      // llama.cpp's qwen3moe graph renormalizes the top-k weights (HF norm_topk_prob) unless the file says otherwise
      // with the generic expert_weights_norm key, and routes every layer that has a router
      const norm = meta[k('expert_weights_norm')];
      if (norm !== undefined && typeof norm !== 'boolean') throw new ModelConfigError(file, k('expert_weights_norm'), `must be a boolean, got ${JSON.stringify(norm)}`);
      config.norm_topk_prob = norm ?? true;
      config.decoder_sparse_step = 1;
      const routed = new Set((tensorNames ?? []).map((n) => /^blk\.(\d+)\.ffn_gate_inp\.weight$/.exec(n)?.[1]).filter((x) => x !== undefined).map(Number));
      const layers = config.num_hidden_layers as number;
      config.mlp_only_layers = tensorNames ? Array.from({ length: layers }, (_, l) => l).filter((l) => !routed.has(l)) : [];
    } else {
      config.intermediate_size = ffExp;
      config.sliding_window = sz(k('attention.sliding_window'), 'sliding_window', 128);
      config.attention_bias = true;
      config.swiglu_limit = 7;
      if (!config.rope_scaling) config.rope_scaling = { rope_type: 'default' };
    }
  }
  if (arch === 'gemma3') {
    config.sliding_window = sz(k('attention.sliding_window'), 'sliding_window', 4096);
    config.query_pre_attn_scalar = keyLength === undefined ? 256 : headDim;
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

/**
 * HF tensor name for a GGUF tensor name (undefined for tensors the decoder does not use, e.g. rope_freqs). MoE tensors
 * that have no single HF counterpart keep llama.cpp's stacking under names of their own (weights.ts reads both forms):
 * ffn_{gate,up,down}_exps -> mlp.experts.{gate,up,down}_exps [E, rows, in] (+ _bias [E, rows]); the router
 * ffn_gate_inp -> mlp.router (gpt-oss) or mlp.gate (Qwen3-MoE); attn_sinks -> self_attn.sinks.
 */
export function hfTensorName(gguf: string, arch: string): string | undefined {
  if (gguf === 'token_embd.weight') return 'model.embed_tokens.weight';
  if (gguf === 'output_norm.weight') return 'model.norm.weight';
  if (gguf === 'output.weight') return 'lm_head.weight';
  const m = /^blk\.(\d+)\.([a-z_]+)\.(weight|bias)$/.exec(gguf);
  if (!m) return undefined;
  const [, layer, part, kind] = m;
  const moe = /^ffn_(gate|up|down)_exps$/.exec(part!);
  if (moe) return `model.layers.${layer}.mlp.experts.${moe[1]}_exps${kind === 'bias' ? '_bias' : ''}`;
  if (part === 'ffn_gate_inp') return `model.layers.${layer}.mlp.${arch === 'gpt-oss' ? 'router' : 'gate'}.${kind}`;
  if (part === 'attn_sinks' && kind === 'weight') return `model.layers.${layer}.self_attn.sinks`;
  let hf = Object.hasOwn(LAYER_NAMES, part!) ? LAYER_NAMES[part!] : undefined;
  // ffn_norm is the pre-MLP norm: HF calls it post_attention_layernorm in Llama/Qwen, pre_feedforward_layernorm in Gemma 3.
  if (part === 'ffn_norm') hf = arch === 'gemma3' ? 'pre_feedforward_layernorm' : 'post_attention_layernorm';
  return hf ? `model.layers.${layer}.${hf}.${kind}` : undefined;
}
