/** gpt-oss and Qwen3-MoE configs (transformers 5 form) and the tensors they imply; errors name the file and field. */
import { describe, expect, it } from 'vitest';
import { decoderConfigFromHF } from '../src/models/config.ts';
import { hfConfigFromGguf } from '../src/models/gguf-map.ts';
import { ropeAttentionScale, ropeInvFreq } from '../src/models/rope.ts';
import { checkWeights, weightSpecs } from '../src/models/weights.ts';
import type { ModelSource } from '../src/models/source.ts';
import { GPT_OSS_TINY, QWEN3_MOE_TINY } from './helpers/moe-tiny.ts';

const with_ = (base: object, over: Record<string, unknown>) => ({ ...structuredClone(base), ...over });

describe('GptOssForCausalLM config', () => {
  it('maps the MoE, attention and YaRN fields', () => {
    const c = decoderConfigFromHF(GPT_OSS_TINY);
    expect(c.family).toBe('gpt_oss');
    expect([c.attentionBias, c.oProjBias, c.attnSinks, c.qkNorm]).toEqual([true, true, true, false]);
    expect(c.slidingWindow).toEqual([4, 0, 4]);
    expect(c.rmsNormEps).toBe(1e-5);
    expect(c.moe).toMatchObject({
      kind: 'gpt_oss',
      numExperts: 8,
      topK: 2,
      expertIntermediateSize: 32,
      routing: 'topk_softmax',
      routerBias: true,
      expertBias: true,
      activation: 'swiglu_clamped',
      swigluAlpha: 1.702,
      swigluLimit: 7,
      expertFormat: 'float',
      sparse: [true, true, true],
    });
    expect(c.ropeTheta).toBe(150000);
    expect(c.ropeScaling).toEqual({ type: 'yarn', factor: 32, originalMaxPositionEmbeddings: 64, betaFast: 32, betaSlow: 1, truncate: false, attentionFactor: 0.1 * Math.log(32) + 1 });
  });

  it('defaults as GptOssConfig does: YaRN over 4096 positions, even layers sliding (window 128)', () => {
    const raw: Record<string, unknown> = structuredClone(GPT_OSS_TINY);
    delete raw.rope_parameters;
    delete raw.layer_types;
    delete raw.sliding_window;
    delete raw.rms_norm_eps;
    const c = decoderConfigFromHF(raw);
    expect(c.slidingWindow).toEqual([128, 0, 128]);
    expect(c.rmsNormEps).toBe(1e-5);
    expect(c.ropeTheta).toBe(150000);
    expect(c.ropeScaling).toMatchObject({ type: 'yarn', factor: 32, originalMaxPositionEmbeddings: 4096, truncate: false });
    // an explicit default rope replaces the class default YaRN
    expect(decoderConfigFromHF(with_(GPT_OSS_TINY, { rope_parameters: { rope_type: 'default', rope_theta: 10000 } })).ropeScaling.type).toBe('default');
  });

  it('reads the MXFP4 form from quantization_config', () => {
    const q = { quantization_config: { quant_method: 'mxfp4', modules_to_not_convert: ['model.layers.*.self_attn', 'model.layers.*.mlp.router', 'model.embed_tokens', 'lm_head'] } };
    expect(decoderConfigFromHF(with_(GPT_OSS_TINY, q)).moe!.expertFormat).toBe('mxfp4');
    expect(decoderConfigFromHF(with_(GPT_OSS_TINY, { quantization_config: { quant_method: 'mxfp4', dequantize: true } })).moe!.expertFormat).toBe('float');
    expect(() => decoderConfigFromHF(with_(GPT_OSS_TINY, { quantization_config: { quant_method: 'gptq' } }), 'x/config.json')).toThrow(
      'x/config.json: quantization_config.quant_method: "gptq" is not supported',
    );
  });

  it('names the file and field of a bad value', () => {
    const f = 'm/config.json';
    const bad = (over: Record<string, unknown>) => () => decoderConfigFromHF(with_(GPT_OSS_TINY, over), f);
    const missing = structuredClone(GPT_OSS_TINY) as Record<string, unknown>;
    delete missing.num_local_experts;
    expect(() => decoderConfigFromHF(missing, f)).toThrow(`${f}: num_local_experts: required field is missing`);
    expect(bad({ num_experts_per_tok: 9 })).toThrow(`${f}: num_experts_per_tok: 9 is more than num_local_experts 8`);
    expect(bad({ num_experts_per_tok: 0 })).toThrow(`${f}: num_experts_per_tok: must be an integer from 1 to 4096, got 0`);
    expect(bad({ layer_types: ['sliding_attention'] })).toThrow(`${f}: layer_types: has 1 entries but num_hidden_layers is 3`);
    expect(bad({ layer_types: ['sliding_attention', 'local', 'full_attention'] })).toThrow(`${f}: layer_types[1]: "local" is not`);
    expect(bad({ swiglu_limit: -1 })).toThrow(`${f}: swiglu_limit: must be a positive finite number, got -1`);
    expect(bad({ attention_bias: 'yes' })).toThrow(`${f}: attention_bias: must be true or false, got "yes"`);
    expect(bad({ rope_parameters: { rope_type: 'yarn', rope_theta: 1e4, factor: 4 } })).toThrow(
      `${f}: rope_scaling.original_max_position_embeddings: required field is missing`,
    );
    expect(bad({ rope_parameters: { rope_type: 'yarn', rope_theta: 1e4, factor: 4, original_max_position_embeddings: 64, truncate: 1 } })).toThrow(
      `${f}: rope_scaling.truncate: must be true or false, got 1`,
    );
  });
});

describe('Qwen3MoeForCausalLM config', () => {
  it('maps the router and which layers are sparse', () => {
    const c = decoderConfigFromHF(QWEN3_MOE_TINY);
    expect(c.family).toBe('qwen3_moe');
    expect([c.qkNorm, c.attentionBias, c.oProjBias, c.attnSinks]).toEqual([true, false, false, false]);
    expect(c.intermediateSize).toBe(96);
    expect(c.moe).toMatchObject({ kind: 'qwen3_moe', numExperts: 8, topK: 2, expertIntermediateSize: 32, routing: 'softmax_topk', normTopkProb: true, activation: 'silu', routerBias: false });
    expect(c.moe!.sparse).toEqual([true, false, true, true]);
    expect(decoderConfigFromHF(with_(QWEN3_MOE_TINY, { mlp_only_layers: [], decoder_sparse_step: 2 })).moe!.sparse).toEqual([false, true, false, true]);
    expect(decoderConfigFromHF(with_(QWEN3_MOE_TINY, { norm_topk_prob: undefined })).moe!.normTopkProb).toBe(false);
  });

  it('names the file and field of a bad value', () => {
    const f = 'q/config.json';
    const bad = (over: Record<string, unknown>) => () => decoderConfigFromHF(with_(QWEN3_MOE_TINY, over), f);
    expect(bad({ mlp_only_layers: [4] })).toThrow(`${f}: mlp_only_layers[0]: 4 is not a layer index from 0 to 3`);
    expect(bad({ mlp_only_layers: 'all' })).toThrow(`${f}: mlp_only_layers: must be a list of layer indices`);
    expect(bad({ decoder_sparse_step: 0 })).toThrow(`${f}: decoder_sparse_step: must be an integer`);
    expect(bad({ norm_topk_prob: 1 })).toThrow(`${f}: norm_topk_prob: must be true or false, got 1`);
    expect(bad({ moe_intermediate_size: 'big' })).toThrow(`${f}: moe_intermediate_size: must be an integer`);
    expect(bad({ use_sliding_window: true })).toThrow(`${f}: use_sliding_window: true is not supported`);
    expect(bad({ num_experts: 8, num_local_experts: 16 })).toThrow(`${f}: num_local_experts: 16 disagrees with num_experts 8`);
  });

  it('reads the expert count under the transformers 5 name (num_local_experts) as under num_experts', () => {
    const raw: Record<string, unknown> = structuredClone(QWEN3_MOE_TINY);
    delete raw.num_experts;
    expect(decoderConfigFromHF({ ...raw, num_local_experts: 16 }).moe!.numExperts).toBe(16);
    expect(decoderConfigFromHF(raw).moe!.numExperts).toBe(128); // Qwen3MoeConfig's default
  });

  it('from GGUF: layers without a router are dense, expert_weights_norm sets norm_topk_prob (llama.cpp: true)', () => {
    const meta: Record<string, unknown> = {
      'general.architecture': 'qwen3moe',
      'qwen3moe.block_count': 3,
      'qwen3moe.embedding_length': 64,
      'qwen3moe.feed_forward_length': 128,
      'qwen3moe.attention.head_count': 4,
      'qwen3moe.attention.head_count_kv': 2,
      'qwen3moe.vocab_size': 256,
      'qwen3moe.expert_count': 8,
      'qwen3moe.expert_used_count': 2,
      'qwen3moe.expert_feed_forward_length': 32,
    };
    const names = ['blk.0.ffn_gate_inp.weight', 'blk.1.ffn_gate.weight', 'blk.2.ffn_gate_inp.weight'];
    const routed = decoderConfigFromHF(hfConfigFromGguf(meta, 'm.gguf').config);
    expect([routed.moe!.sparse, routed.moe!.normTopkProb]).toEqual([[true, true, true], true]);
    const mixed = decoderConfigFromHF(hfConfigFromGguf({ ...meta, 'qwen3moe.expert_weights_norm': false }, 'm.gguf', names).config);
    expect([mixed.moe!.sparse, mixed.moe!.normTopkProb]).toEqual([[true, false, true], false]);
    expect(() => hfConfigFromGguf({ ...meta, 'qwen3moe.expert_weights_norm': 1 }, 'm.gguf')).toThrow('m.gguf: qwen3moe.expert_weights_norm: must be a boolean, got 1');
  });
});

describe('YaRN frequencies', () => {
  it('keeps high frequencies, divides low ones by the factor, ramps between (truncate false)', () => {
    const c = decoderConfigFromHF(GPT_OSS_TINY);
    const inv = ropeInvFreq(16, c.ropeTheta, c.ropeScaling);
    const plain = ropeInvFreq(16, c.ropeTheta, { type: 'default', factor: 1 });
    // low = 16 ln(64 / (32 * 2pi)) / (2 ln 150000) < 0 -> 0; high = 16 ln(64 / 2pi) / (2 ln 150000) = 1.555
    const high = (16 * Math.log(64 / (2 * Math.PI))) / (2 * Math.log(150000));
    expect(inv[0]).toBeCloseTo(plain[0]!, 6); // ramp 0: extrapolation
    const r1 = 1 / high;
    expect(inv[1]! / plain[1]!).toBeCloseTo((1 - r1) + r1 / 32, 5);
    for (let i = 2; i < 8; i++) expect(inv[i]! / plain[i]!).toBeCloseTo(1 / 32, 5);
    expect(ropeAttentionScale(c.ropeScaling)).toBeCloseTo(1.34657, 5);
  });
});

describe('MoE weight specs', () => {
  it('gpt-oss: attention biases incl. o_proj, sinks, router with bias, experts as stored', () => {
    const c = decoderConfigFromHF(GPT_OSS_TINY);
    const names = new Map(weightSpecs(c).map((s) => [s.name, s.shape]));
    const p = 'model.layers.1.';
    expect(names.get(p + 'self_attn.o_proj.bias')).toEqual([64]);
    expect(names.get(p + 'self_attn.sinks')).toEqual([4]);
    expect(names.get(p + 'mlp.router.weight')).toEqual([8, 64]);
    expect(names.get(p + 'mlp.router.bias')).toEqual([8]);
    expect(names.get(p + 'mlp.experts.gate_up_proj')).toEqual([8, 64, 64]);
    expect(names.get(p + 'mlp.experts.down_proj')).toEqual([8, 32, 64]);
    expect(names.get(p + 'mlp.experts.down_proj_bias')).toEqual([8, 64]);
    expect(names.has(p + 'mlp.gate_proj.weight')).toBe(false);
    const q = decoderConfigFromHF(with_(GPT_OSS_TINY, { quantization_config: { quant_method: 'mxfp4' } }));
    const qn = new Map(weightSpecs(q).map((s) => [s.name, s.shape]));
    expect(qn.get(p + 'mlp.experts.gate_up_proj_blocks')).toEqual([8, 64, 2, 16]);
    expect(qn.get(p + 'mlp.experts.gate_up_proj_scales')).toEqual([8, 64, 2]);
    expect(qn.get(p + 'mlp.experts.down_proj_blocks')).toEqual([8, 64, 1, 16]);
    expect(qn.has(p + 'mlp.experts.gate_up_proj')).toBe(false);
  });

  it('Qwen3-MoE: per-expert tensors, or stacked when the source holds them; dense MLP on mlp_only layers', () => {
    const c = decoderConfigFromHF(QWEN3_MOE_TINY);
    const names = new Map(weightSpecs(c).map((s) => [s.name, s.shape]));
    expect(names.get('model.layers.0.mlp.gate.weight')).toEqual([8, 64]);
    expect(names.get('model.layers.0.mlp.experts.7.down_proj.weight')).toEqual([64, 32]);
    expect(names.get('model.layers.1.mlp.gate_proj.weight')).toEqual([96, 64]);
    expect(names.has('model.layers.1.mlp.gate.weight')).toBe(false);
    const stacked = new Map(weightSpecs(c, (n) => n.endsWith('mlp.experts.gate_up_proj')).map((s) => [s.name, s.shape]));
    expect(stacked.get('model.layers.2.mlp.experts.gate_up_proj')).toEqual([8, 64, 64]);
    expect(stacked.get('model.layers.2.mlp.experts.down_proj')).toEqual([8, 64, 32]);
    expect(stacked.has('model.layers.2.mlp.experts.0.gate_proj.weight')).toBe(false);
  });

  it('checkWeights names a missing expert tensor and an MXFP4 width that is not a multiple of 32', () => {
    const c = decoderConfigFromHF(QWEN3_MOE_TINY);
    const specs = weightSpecs(c);
    const shapes = new Map(specs.map((s) => [s.name, s.shape]));
    shapes.delete('model.layers.3.mlp.experts.5.up_proj.weight');
    const src = {
      kind: 'hf',
      config: c,
      configFile: 'q/config.json',
      weightsFile: 'q/model.safetensors',
      layerCountField: 'num_hidden_layers',
      has: (n: string) => shapes.has(n),
      names: () => [...shapes.keys()],
      info: (n: string) => ({ name: n, shape: shapes.get(n)! }),
    } as unknown as ModelSource;
    expect(() => checkWeights(src)).toThrow('q/model.safetensors: tensor "model.layers.3.mlp.experts.5.up_proj.weight" is missing (expected shape [32, 64]');
    const g = decoderConfigFromHF(with_(GPT_OSS_TINY, { intermediate_size: 48, quantization_config: { quant_method: 'mxfp4' } }), 'g/config.json');
    expect(() => checkWeights({ ...src, config: g, configFile: 'g/config.json' } as ModelSource)).toThrow(
      'g/config.json: intermediate_size: 48 is not a multiple of 32, which MXFP4 experts',
    );
  });
});
