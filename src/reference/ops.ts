/**
 * The CPU reference of every operation the op-test harness covers, keyed by registry operation name: adding an
 * operation to REFERENCE_OPS without a reference (or test cases, src/selftest/cases.ts) is a type error.
 * Each entry maps buffers by the registry's binding names and uniform values by its field names to the expected
 * contents of the bindings the kernel writes (f64 math; matmul reuses matmul-quant.ts's f64-accumulated f32 result).
 */
import { f16BytesToF32 } from '../formats/f16.ts';
import { attentionRef, type AttentionUniforms } from './attention.ts';
import { biasAddRef, geluRef, rmsnormQkRef, scaleRef, type BiasAddUniforms, type GeluUniforms, type RmsnormQkUniforms, type ScaleUniforms } from './elementwise.ts';
import { castF16ToF32Ref, dequantQ8_0RowwiseRef, gatherF16Ref, type DequantRowwiseUniforms } from './f16-ops.ts';
import { activationsF32, fusedFfnRef, type FusedFfnUniforms } from './fused-ffn.ts';
import { gatherRef, type GatherUniforms } from './gather.ts';
import { matmulAnyReference, type MatmulUniforms } from './matmul-quant.ts';
import { repPenaltyRef, type RepPenaltyUniforms } from './rep-penalty.ts';
import { residualRef, type ResidualUniforms } from './residual.ts';
import { layernormRef, type LayernormUniforms } from './layernorm.ts';
import { rmsnormRef, type RmsnormUniforms } from './rmsnorm.ts';
import { ropeRef, type RopeMode, type RopeUniforms } from './rope.ts';
import { siluRef, type SiluUniforms } from './silu.ts';
import { softmaxRef, type SoftmaxUniforms } from './softmax.ts';
import { bf16WidenRef, clampRef, reluRef, ropeQkRef, splitQgRef, splitQkvRef, transposeRef, type RopeQkUniforms, type SplitQkvUniforms } from './tensor-ops.ts';
import { gatherSplitRef, lmHeadArgmaxPhase1Ref, lmHeadArgmaxPhase2Ref, moeGatherRef, moeOffsetsRef, scatterAddRef, topkRef, widen, type LmHeadArgmaxUniforms, type MoeGatherUniforms, type GatherSplitUniforms, type MoeOffsetsUniforms, type ScatterAddUniforms, type TopkMode } from './moe-combine.ts';

export const REFERENCE_OPS = ['matmul', 'gather', 'residual', 'rmsnorm', 'softmax', 'silu', 'rope', 'attention', 'rep_penalty', 'scale', 'bias_add', 'gelu', 'rmsnorm_qk', 'cast', 'dequant', 'layernorm', 'fused_ffn', 'relu', 'clamp', 'transpose', 'bf16_to_f32', 'bf16_to_f16', 'split_qkv', 'split_qg', 'rope_qk', 'scatter_add', 'moe_offsets', 'gather_split4', 'gather_split8', 'topk', 'lm_head_argmax', 'moe_gather'] as const;
export type ReferenceOp = (typeof REFERENCE_OPS)[number];

export type HostTensor = Float32Array | Uint32Array;
/** Buffers by registry binding name. */
export type HostTensors = Record<string, HostTensor>;
/** Uniform values by registry field name. */
export type UniformNumbers = Record<string, number>;

/** Expected contents of the written bindings, by binding name. */
export type ReferenceResult = Record<string, ArrayLike<number>>;

/**
 * A reference: `entryPoint` selects the semantics where one operation's entry points differ (rope). It throws
 * UnsupportedEntryPointError for an entry point it does not model.
 */
export type ReferenceFn = (t: HostTensors, u: UniformNumbers, entryPoint: string, variant?: string) => ReferenceResult;

export class UnsupportedEntryPointError extends Error {
  constructor(op: string, entryPoint: string) {
    super(`the CPU reference of ${op} has no semantics for entry point "${entryPoint}"`);
    this.name = 'UnsupportedEntryPointError';
  }
}

function need<T extends HostTensor>(op: string, t: HostTensors, name: string): T {
  const v = t[name];
  if (!v) throw new Error(`reference ${op}: missing buffer "${name}"`);
  return v as T;
}

const f32 = (op: string, t: HostTensors, name: string) => need<Float32Array>(op, t, name);

/** An f32 buffer, or f16 values packed two per u32 word (low half first) widened to f32. */
function f32OrPackedF16(op: string, t: HostTensors, name: string): Float32Array {
  const v = need(op, t, name);
  return v instanceof Uint32Array ? f16BytesToF32(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)) : v;
}

const ROPE_MODES: Record<string, RopeMode> = {
  main: 'tables',
  rope_compute_freqs: 'linear',
  rope_qk: 'qk',
  rope_ntk_scaled: 'ntk',
};

export const REFERENCE: Record<ReferenceOp, ReferenceFn> = {
  // A: f32, or f16 packed in u32 words (the _f16a kernels); B: f32, or Q4_K / f16 packed in u32 words
  // (matmulWeightFormat tells them apart by size)
  matmul: (t, u) => {
    const mu = u as unknown as MatmulUniforms;
    return { C: matmulAnyReference(activationsF32(need('matmul', t, 'A'), mu.M * mu.K), need('matmul', t, 'B'), mu) };
  },
  // embeddings: f32, or f16 packed in u32 words (gather.f16)
  gather: (t, u) => {
    const ids = need<Uint32Array>('gather', t, 'indices');
    const table = need('gather', t, 'embeddings');
    const g = u as unknown as GatherUniforms;
    return { output: table instanceof Uint32Array ? gatherF16Ref(ids, table, g) : gatherRef(ids, table, g) };
  },
  // input, residual (and rmsnorm's input/residual, silu/gelu's input/gate): f32, or f16 packed in u32 words (the f16 kernels)
  residual: (t, u) => ({ output: residualRef(f32OrPackedF16('residual', t, 'input'), f32OrPackedF16('residual', t, 'residual'), u as unknown as ResidualUniforms) }),
  rmsnorm: (t, u) => ({
    output: rmsnormRef(f32OrPackedF16('rmsnorm', t, 'input'), f32('rmsnorm', t, 'weight'), t.residual && f32OrPackedF16('rmsnorm', t, 'residual'), u as unknown as RmsnormUniforms),
  }),
  layernorm: (t, u) => ({
    output: layernormRef(f32OrPackedF16('layernorm', t, 'input'), f32('layernorm', t, 'weight'), f32('layernorm', t, 'bias'), u as unknown as LayernormUniforms),
  }),
  softmax: (t, u) => ({ output: softmaxRef(f32('softmax', t, 'input'), u as unknown as SoftmaxUniforms) }),
  silu: (t, u) => ({ output: siluRef(f32OrPackedF16('silu', t, 'input'), t.gate && f32OrPackedF16('silu', t, 'gate'), u as unknown as SiluUniforms) }),
  rope: (t, u, entryPoint) => {
    const mode = ROPE_MODES[entryPoint];
    if (!mode) throw new UnsupportedEntryPointError('rope', entryPoint);
    const tables = { cos: f32('rope', t, 'freqs_cos'), sin: f32('rope', t, 'freqs_sin') };
    return { input: ropeRef(f32OrPackedF16('rope', t, 'input'), u as unknown as RopeUniforms, mode, tables) };
  },
  // Q, K, V: f32, or f16 packed in u32 words (the f16 and f16-KV kernels)
  attention: (t, u) => ({
    output: attentionRef(u as unknown as AttentionUniforms, {
      q: f32OrPackedF16('attention', t, 'Q'),
      k: f32OrPackedF16('attention', t, 'K'),
      v: f32OrPackedF16('attention', t, 'V'),
      kvLenBuffer: t.kv_len,
      pageTable: t.page_table,
    }),
  }),
  rep_penalty: (t, u) => ({
    binding1: repPenaltyRef(Float32Array.from(f32('rep_penalty', t, 'binding1')), need<Uint32Array>('rep_penalty', t, 'binding2'), u as unknown as RepPenaltyUniforms),
  }),
  scale: (t, u, entryPoint) => {
    if (entryPoint !== 'main' && entryPoint !== 'main_inplace') throw new UnsupportedEntryPointError('scale', entryPoint);
    return { output: scaleRef(f32OrPackedF16('scale', t, entryPoint === 'main' ? 'input' : 'output'), u as unknown as ScaleUniforms) };
  },
  bias_add: (t, u) => ({ data: biasAddRef(f32OrPackedF16('bias_add', t, 'data'), f32OrPackedF16('bias_add', t, 'bias'), u as unknown as BiasAddUniforms) }),
  gelu: (t, u) => ({ output: geluRef(f32OrPackedF16('gelu', t, 'input'), t.gate && f32OrPackedF16('gelu', t, 'gate'), u as unknown as GeluUniforms) }),
  rmsnorm_qk: (t, u) =>
    rmsnormQkRef(f32OrPackedF16('rmsnorm_qk', t, 'q_input'), f32('rmsnorm_qk', t, 'q_weight'), f32OrPackedF16('rmsnorm_qk', t, 'k_input'), f32('rmsnorm_qk', t, 'k_weight'), u as unknown as RmsnormQkUniforms),
  // f16 -> f32 only (input packed in u32 words); f32 -> f16 writes f16 and is checked in test/kernels-small-f16.test.ts
  cast: (t, u) => ({ output: castF16ToF32Ref(need<Uint32Array>('cast', t, 'input'), u as unknown as { size: number }) }),
  // Q8_0 row-wise (dequant.f32_rowwise); blocks packed in u32 words
  dequant: (t, u) => {
    const q = need<Uint32Array>('dequant', t, 'quantized');
    return { output: dequantQ8_0RowwiseRef(new Uint8Array(q.buffer, q.byteOffset, q.byteLength), u as unknown as DequantRowwiseUniforms) };
  },
  // x: f32 or f16 words; gate/up weights: f32, f16 words or Q4_K blocks in words (told apart by size)
  fused_ffn: (t, u) => ({
    output: fusedFfnRef(need('fused_ffn', t, 'input'), need('fused_ffn', t, 'gate_weights'), need('fused_ffn', t, 'up_weights'), u as unknown as FusedFfnUniforms),
  }),
  // rmsnorm, layernorm, rmsnorm_qk, rope, scale, bias_add above: activations f32 or f16 packed in u32 words (the f16
  // kernels); references of the ops below: src/reference/tensor-ops.ts
  relu: (t, u) => ({ output: reluRef(f32OrPackedF16('relu', t, 'input'), u as unknown as { size: number }) }),
  clamp: (t, u) => ({ data: clampRef(f32('clamp', t, 'data'), u as unknown as { size: number; min: number; max: number }) }),
  transpose: (t, u) => ({ output: transposeRef(f32('transpose', t, 'input'), u as unknown as { rows: number; cols: number }) }),
  // bf16 pairs packed in u32 words
  bf16_to_f32: (t, u) => ({ output: bf16WidenRef(need<Uint32Array>('bf16_to_f32', t, 'input'), u as unknown as { size: number }) }),
  bf16_to_f16: (t, u) => ({ output: bf16WidenRef(need<Uint32Array>('bf16_to_f16', t, 'input'), u as unknown as { size: number }, true) }),
  split_qkv: (t, u) => splitQkvRef(f32OrPackedF16('split_qkv', t, 'fused_qkv'), u as unknown as SplitQkvUniforms),
  split_qg: (t, u) => splitQgRef(f32OrPackedF16('split_qg', t, 'qg_interleaved'), u as unknown as { num_tokens: number; num_heads: number; head_dim: number }),
  rope_qk: (t, u) =>
    ropeQkRef(f32OrPackedF16('rope_qk', t, 'q_input'), f32OrPackedF16('rope_qk', t, 'k_input'), u as unknown as RopeQkUniforms, {
      cos: f32('rope_qk', t, 'freqs_cos'),
      sin: f32('rope_qk', t, 'freqs_sin'),
    }),
  // MoE combine (src/reference/moe-combine.ts): input/weights f32 or f16 words; dense [E, T, H] rows, or dynamic rows
  // by token_offsets (+ expert_scales); scatter_add_accumulate adds to the output's contents
  scatter_add: (t, u, entryPoint) => {
    const dynamic = !!t.token_offsets;
    return {
      output: scatterAddRef(
        {
          input: widen(need('scatter_add', t, 'input')),
          indices: need<Uint32Array>('scatter_add', t, dynamic ? 'routing_indices' : 'indices'),
          weights: widen(need('scatter_add', t, dynamic ? 'routing_weights' : 'weights')),
          ...(dynamic ? { tokenOffsets: t.token_offsets } : {}),
          ...(t.expert_scales ? { expertScales: t.expert_scales } : {}),
          ...(entryPoint === 'scatter_add_accumulate' ? { accumulate: f32('scatter_add', t, 'output') } : {}),
        },
        u as unknown as ScatterAddUniforms,
      ),
    };
  },
  moe_offsets: (t, u) => ({
    token_offsets: moeOffsetsRef(need('moe_offsets', t, 'token_counts'), need('moe_offsets', t, 'token_map'), need('moe_offsets', t, 'token_offsets'), u as unknown as MoeOffsetsUniforms),
  }),
  // tables: f16 words (absent sections: no buffer, no rows)
  gather_split4: (t, u) => ({ output: gatherSplitRef(need('gather_split4', t, 'indices'), [0, 1, 2, 3].map((k) => (t[`embeddings${k}`] ? widen(t[`embeddings${k}`]!) : [])), u as unknown as GatherSplitUniforms) }),
  gather_split8: (t, u) => ({ output: gatherSplitRef(need('gather_split8', t, 'indices'), [0, 1, 2, 3, 4, 5, 6, 7].map((k) => (t[`embeddings${k}`] ? widen(t[`embeddings${k}`]!) : [])), u as unknown as GatherSplitUniforms) }),
  // input: f32 or f16 words; rows = input elements / size (f16: an even element count, the words hold no padding half). softmax_topk: softmax over the row, except the GPT-OSS router
  // kernel (same entry point name), whose values are the softmax over the k selected
  topk: (t, u, entryPoint, variant) => {
    const modes: Record<string, TopkMode> = { main: 'values', topk_2_small: 'values', softmax_topk: variant === 'topk.gptoss_router_topk' ? 'softmax_selected' : 'softmax' };
    const mode = modes[entryPoint];
    if (!mode) throw new UnsupportedEntryPointError('topk', entryPoint);
    const x = widen(need('topk', t, 'input'));
    const size = u.size!;
    const { values, indices } = topkRef(x, Math.floor(x.length / size), size, u.k!, mode);
    return { values, indices };
  },
  // phase1: hidden f32, weights Q4_K blocks (the _q4k kernels) or f16 words ([vocab, hidden], or [hidden, vocab] when
  // transpose_b = 0); phase2: temp_logits / temp_indices -> output[output_index]
  lm_head_argmax: (t, u, entryPoint, variant) => {
    const lu = u as unknown as LmHeadArgmaxUniforms;
    if (entryPoint === 'phase2') {
      const tl = f32('lm_head_argmax', t, 'temp_logits');
      const ti = need('lm_head_argmax', t, 'temp_indices');
      // the temp buffers are read-write bindings phase2 only reads: expected unchanged
      return { output: lmHeadArgmaxPhase2Ref(tl, ti, need('lm_head_argmax', t, 'output'), lu), temp_logits: tl, temp_indices: ti };
    }
    if (entryPoint !== 'phase1') throw new UnsupportedEntryPointError('lm_head_argmax', entryPoint);
    const hidden = f32('lm_head_argmax', t, 'hidden');
    const w = need<Uint32Array>('lm_head_argmax', t, 'weights');
    const V = lu.vocab_size;
    const H = lu.hidden_size;
    let logits: ArrayLike<number>;
    if (variant?.includes('q4k')) logits = matmulAnyReference(hidden, w, { M: 1, N: V, K: H, alpha: 1 } as MatmulUniforms);
    else {
      const wf = widen(w);
      const l = new Float64Array(V);
      for (let c = 0; c < V; c++) {
        let s = 0;
        for (let k = 0; k < H; k++) s += hidden[k]! * wf[lu.transpose_b ? c * H + k : k * V + c]!;
        l[c] = s;
      }
      logits = l;
    }
    return lmHeadArgmaxPhase1Ref(logits, lu);
  },
  // gather_single_pass only (count_and_map / gather_tokens: src/selftest/not-recoverable.json)
  moe_gather: (t, u, entryPoint) => {
    if (entryPoint !== 'gather_single_pass') throw new UnsupportedEntryPointError('moe_gather', entryPoint);
    return { output: moeGatherRef(f32('moe_gather', t, 'input'), need('moe_gather', t, 'expert_assignments'), u as unknown as MoeGatherUniforms) };
  },
};
