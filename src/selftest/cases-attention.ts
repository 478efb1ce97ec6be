/**
 * Op-test cases of `attention` (registered in cases.ts): decode and prefill shapes, GQA/MQA, causal, sliding window,
 * softcap, non-causal (encoder) attention, evicted prefixes (kv_start), kv_len from the storage binding, and the paged
 * and ring cache layouts. Reference: src/reference/attention.ts; semantics: src/kernels/attention_decode.wgsl.
 * Contracts: attention.contract.json (the model's), attention_kernel.contract.json (every kernel and layout).
 */
import { attentionUniforms, kvEnd, kvRowsNeeded, type AttentionUniforms } from '../reference/attention.ts';
import type { KernelVariant } from '../registry/types.ts';
import type { OpCase, OpCases } from './cases.ts';

interface CaseOpts {
  /** Value of the kvLen buffer (read when kv_len_source = 1). */
  kvLenBuffer?: number;
  pageTable?: number[];
  /** Amplitude of Q and K (larger: sharper softmax). */
  amp?: number;
  only?: (v: KernelVariant) => boolean;
}

/**
 * The contract request of an attention call: q [seq, heads, head_dim], k/v [rows, kv_heads, head_dim] with as many
 * rows as the layout reads, and the attention parameters as attributes. Evicted prefixes, kv_len from the buffer
 * and the paged and ring layouts are attributes only the general contract (attention_kernel) declares; the other
 * cases run through the model's (attention).
 */
export function attentionRequest(u: AttentionUniforms, o: { kvLenBuffer?: number; pageTable?: readonly number[] } = {}) {
  const kvLen = new Uint32Array([o.kvLenBuffer ?? 0]);
  const pageTable = new Uint32Array(o.pageTable ?? [0]);
  const rows = Math.max(1, kvRowsNeeded(u, kvEnd(u, { q: [], k: [], v: [], kvLenBuffer: kvLen }), pageTable));
  const kv = [rows, u.num_kv_heads, u.head_dim];
  return {
    shapes: { q: [u.seq_len, u.num_heads, u.head_dim], k: kv, v: kv, kvLen: [1], pageTable: [pageTable.length] },
    attributes: {
      start_pos: u.start_pos,
      kv_len: u.kv_len,
      scale: u.scale,
      softcap: u.attn_softcap,
      sliding_window: u.sliding_window,
      causal: u.is_causal,
      ...(u.kv_len_source ? { kv_len_source: u.kv_len_source } : {}),
      ...(u.kv_start ? { kv_start: u.kv_start } : {}),
      ...(u.kv_layout ? { kv_layout: u.kv_layout } : {}),
      ...(u.page_size ? { page_size: u.page_size } : {}),
    },
    kvLen,
    pageTable,
  };
}

function attentionCase(name: string, u: AttentionUniforms, o: CaseOpts = {}): OpCase {
  const req = attentionRequest(u, o);
  const kvn = req.shapes.k.reduce((a, d) => a * d, 1);
  return {
    name,
    shapes: req.shapes,
    dtypes: { q: 'float32', k: 'float32', v: 'float32' },
    attributes: req.attributes,
    only: o.only,
    inputs: (r) => {
      const amp = o.amp ?? 1;
      return {
        q: r.floats(u.seq_len * u.num_heads * u.head_dim, -amp, amp),
        k: r.floats(kvn, -amp, amp),
        v: r.floats(kvn),
        kvLen: req.kvLen,
        pageTable: req.pageTable,
      };
    },
  };
}

/** The f32 kernels the cases cover; the f16 twins are tested in test/kernels-attention.test.ts. */
const COVERED = new Set(['attention.decode', 'attention.decode_small', 'attention.prefill_small', 'attention.prefill']);

const A = attentionUniforms;
export const ATTENTION_CASES: OpCases = {
  contracts: ['attention', 'attention_kernel'],
  written: ['output'],
  notCovered: (v) => (COVERED.has(v.id) ? undefined : 'cases are f32 Q/K/V/output for the contiguous/paged/ring layouts of attention*.wgsl'),
  cases: [
    attentionCase('decode kv_len 1, MHA, D 64', A({ num_heads: 4, head_dim: 64, kv_len: 1, seq_len: 1 })),
    attentionCase('decode kv_len 17, GQA 4:1, D 128', A({ num_heads: 8, num_kv_heads: 2, head_dim: 128, kv_len: 17, seq_len: 1 })),
    attentionCase('decode kv_len 300, GQA 2:1, D 16, softcap 5', A({ num_heads: 4, num_kv_heads: 2, head_dim: 16, kv_len: 300, seq_len: 1, attn_softcap: 5 }), { amp: 3 }),
    attentionCase('decode kv_len 1100, MQA 8:1, D 80', A({ num_heads: 8, num_kv_heads: 1, head_dim: 80, kv_len: 1100, seq_len: 1 })),
    attentionCase('decode kv_len 4096, GQA 4:1, D 128', A({ num_heads: 4, num_kv_heads: 1, head_dim: 128, kv_len: 4096, seq_len: 1 })),
    // the longest prefill on the tiled prefill kernel only (the per-query kernels cover seq 64 below; SwiftShader is slow)
    attentionCase('prefill seq 512 start 0, GQA 2:1, D 32', A({ num_heads: 2, num_kv_heads: 1, head_dim: 32, kv_len: 512, seq_len: 512 }), {
      only: (v) => v.id === 'attention.prefill',
    }),
    attentionCase('prefill seq 1 start 0, D 64', A({ num_heads: 2, head_dim: 64, kv_len: 1, seq_len: 1 })),
    attentionCase('prefill seq 7 start 5, GQA 4:1, D 64', A({ num_heads: 8, num_kv_heads: 2, head_dim: 64, kv_len: 12, seq_len: 7 })),
    attentionCase('prefill seq 64 start 0, GQA 4:1, D 128', A({ num_heads: 4, num_kv_heads: 1, head_dim: 128, kv_len: 64, seq_len: 64 })),
    attentionCase('prefill seq 37 start 20, MHA, D 16', A({ num_heads: 3, head_dim: 16, kv_len: 57, seq_len: 37 })),
    attentionCase('prefill seq 20 start 10, sliding window 5, D 32', A({ num_heads: 2, head_dim: 32, kv_len: 30, seq_len: 20, sliding_window: 5 })),
    attentionCase('prefill seq 19, softcap 2, GQA 8:1, D 256', A({ num_heads: 8, num_kv_heads: 1, head_dim: 256, kv_len: 19, seq_len: 19, attn_softcap: 2 }), { amp: 2 }),
    attentionCase('non-causal (encoder) seq 23, D 64', A({ num_heads: 2, head_dim: 64, kv_len: 23, seq_len: 23, is_causal: 0, start_pos: 0 })),
    attentionCase('non-causal symmetric window 4, seq 13, D 16', A({ num_heads: 1, head_dim: 16, kv_len: 13, seq_len: 13, is_causal: 0, start_pos: 0, sliding_window: 4 })),
    attentionCase('kv_start 6 (evicted prefix), decode, D 64', A({ num_heads: 2, head_dim: 64, kv_len: 40, seq_len: 1, kv_start: 6 })),
    attentionCase('kv_len from the binding (kv_len_source 1), seq 3, D 64', A({ num_heads: 2, head_dim: 64, kv_len: 999, seq_len: 3, start_pos: 12345, kv_len_source: 1 }), {
      kvLenBuffer: 45,
    }),
    attentionCase('paged layout (page_size 8), seq 5, D 32', A({ num_heads: 2, head_dim: 32, kv_len: 29, seq_len: 5, kv_layout: 1, page_size: 8 }), { pageTable: [3, 0, 2, 1] }),
    attentionCase(
      'ring layout (capacity 16), window 16, decode at 50, D 64',
      A({ num_heads: 2, head_dim: 64, kv_len: 51, seq_len: 1, kv_layout: 2, page_size: 16, sliding_window: 16, kv_start: 35 }),
    ),
    // attention.prefill holds head_dim <= 256 in workgroup memory
    attentionCase('decode D 300 (head_dim > workgroup)', A({ num_heads: 1, head_dim: 300, kv_len: 33, seq_len: 1 }), { only: (v) => v.id !== 'attention.prefill' }),
    attentionCase('queries before the first key (kv_start 3): zeros', A({ num_heads: 1, head_dim: 16, kv_len: 8, seq_len: 2, start_pos: 0, kv_start: 3 })),
  ],
};
