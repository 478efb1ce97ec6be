/** Model shapes the benchmarks build with random weights (bench/torch_decode.py has the same list for the PyTorch peer). */
export const PRESETS: Record<string, Record<string, unknown>> = {
  // TinyLlama-1.1B shapes
  'llama-1.1b': { architectures: ['LlamaForCausalLM'], hidden_size: 2048, intermediate_size: 5632, num_hidden_layers: 22, num_attention_heads: 32, num_key_value_heads: 4, vocab_size: 32000, max_position_embeddings: 2048 },
  // Llama-3.2-1B-like shapes (tied embeddings)
  'llama-1b-128k': { architectures: ['LlamaForCausalLM'], hidden_size: 2048, intermediate_size: 8192, num_hidden_layers: 16, num_attention_heads: 32, num_key_value_heads: 8, head_dim: 64, vocab_size: 128256, max_position_embeddings: 2048, tie_word_embeddings: true },
  // Llama-3.1-8B shapes
  'llama-8b': { architectures: ['LlamaForCausalLM'], hidden_size: 4096, intermediate_size: 14336, num_hidden_layers: 32, num_attention_heads: 32, num_key_value_heads: 8, head_dim: 128, vocab_size: 128256, max_position_embeddings: 4096 },
  // Llama-3.1-8B shapes with 8 of its 32 layers: the same kernels over a quarter of the weights (1.1 GB at Q4_K), to
  // see whether a layer's time depends on how much memory the step walks
  'llama-8b-l8': { architectures: ['LlamaForCausalLM'], hidden_size: 4096, intermediate_size: 14336, num_hidden_layers: 8, num_attention_heads: 32, num_key_value_heads: 8, head_dim: 128, vocab_size: 128256, max_position_embeddings: 4096 },
  // Qwen3-0.6B shapes (q/k norms, tied embeddings)
  'qwen3-0.6b': { architectures: ['Qwen3ForCausalLM'], hidden_size: 1024, intermediate_size: 3072, num_hidden_layers: 28, num_attention_heads: 16, num_key_value_heads: 8, head_dim: 128, vocab_size: 151936, max_position_embeddings: 4096, tie_word_embeddings: true },
  // gpt-oss-20b shapes (24 layers, 32 experts, top-4, hidden 2880, MXFP4 experts as released; sliding/full layers)
  'gpt-oss-20b': { architectures: ['GptOssForCausalLM'], hidden_size: 2880, intermediate_size: 2880, num_hidden_layers: 24, num_attention_heads: 64, num_key_value_heads: 8, head_dim: 64, vocab_size: 201088, max_position_embeddings: 4096, num_local_experts: 32, num_experts_per_tok: 4, sliding_window: 128, rope_theta: 150000, quantization_config: { quant_method: 'mxfp4' }, tie_word_embeddings: false },
  // Qwen3-30B-A3B shapes (48 layers, 128 experts, top-8, hidden 2048, expert width 768)
  'qwen3-30b-a3b': { architectures: ['Qwen3MoeForCausalLM'], hidden_size: 2048, intermediate_size: 6144, moe_intermediate_size: 768, num_hidden_layers: 48, num_attention_heads: 32, num_key_value_heads: 4, head_dim: 128, vocab_size: 151936, max_position_embeddings: 4096, num_experts: 128, num_experts_per_tok: 8, norm_topk_prob: true, decoder_sparse_step: 1, mlp_only_layers: [], tie_word_embeddings: false },
  // small, for CPU machines
  'tiny-gpt-oss': { architectures: ['GptOssForCausalLM'], hidden_size: 256, intermediate_size: 256, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64, vocab_size: 2048, max_position_embeddings: 512, num_local_experts: 8, num_experts_per_tok: 2, sliding_window: 16, quantization_config: { quant_method: 'mxfp4' } },
  'tiny-qwen3-moe': { architectures: ['Qwen3MoeForCausalLM'], hidden_size: 256, intermediate_size: 768, moe_intermediate_size: 256, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64, vocab_size: 2048, max_position_embeddings: 512, num_experts: 8, num_experts_per_tok: 2, norm_topk_prob: true },
  tiny: { architectures: ['LlamaForCausalLM'], hidden_size: 256, intermediate_size: 768, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, vocab_size: 2048, max_position_embeddings: 512 },
};
