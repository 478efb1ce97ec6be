/**
 * Op-test cases of `attention` (registered in cases.ts): decode and prefill shapes, GQA/MQA, causal, sliding window,
 * softcap, non-causal (encoder) attention, evicted prefixes (kv_start), kv_len from the storage binding, and the paged
 * and ring cache layouts; each for f32, f16-KV and all-f16 kernels (the f16 ones need shader-f16: the GPU lane). Reference: src/reference/attention.ts; semantics: src/kernels/attention_decode.wgsl.
 * Contracts: attention.contract.json (the model's), attention_kernel.contract.json (every kernel and layout).
 */
import { attentionUniforms, kvEnd, kvRowsNeeded, type AttentionUniforms } from '../reference/attention.ts';
import { f32ToF16Bytes } from '../formats/f16.ts';
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

/** Element types of a kernel: f32 Q/K/V/output, f32 Q/output with f16 K/V, or f16 everywhere (from its registry record). */
export type AttentionKind = 'f32' | 'f16kv' | 'f16';

export function attentionKind(v: KernelVariant): AttentionKind {
  if (v.outputDtype === 'f16') return 'f16';
  return v.requires.includes('shader-f16') ? 'f16kv' : 'f32';
}

const KIND_DTYPES: Record<AttentionKind, { q: string; kv: string }> = {
  f32: { q: 'float32', kv: 'float32' },
  f16kv: { q: 'float32', kv: 'float16' },
  f16: { q: 'float16', kv: 'float16' },
};

/** The cache length the contracts derive (kv_len, or start_pos + seq_len when 0). */
const derivedKvLen = (u: AttentionUniforms) => (u.kv_len > 0 ? u.kv_len : u.start_pos + u.seq_len);

/**
 * Whether kernel `v` takes these parameters: the shape conditions of its attention_kernel contract variant (exact
 * head_dim of the head128/256/512 kernels, head_dim <= 256 for the tiled prefill, the page table for the paged
 * kernels, one query for decode_streaming and several for prefill_streaming, kv_len <= 2048 for the chunked ones,
 * head_dim <= 512 for all others).
 */
export function attentionFits(v: KernelVariant, u: AttentionUniforms): boolean {
  const n = v.name;
  const exact = /head(\d+)/.exec(n);
  if (exact) return u.head_dim === Number(exact[1]);
  if (/^prefill(_f16kv|_f16)?$/.test(n)) return u.head_dim <= 256;
  if (u.head_dim > 512) return false;
  if (n.includes('paged')) return u.kv_layout === 1 && u.page_size > 0;
  if (n.startsWith('prefill_streaming')) return u.seq_len > 1;
  if (n.startsWith('decode_streaming')) return u.seq_len === 1;
  if (n.includes('chunked')) return derivedKvLen(u) <= 2048;
  return true;
}

/** f16 values packed two per u32 word (the layout of an f16 storage buffer). */
function packF16(values: ArrayLike<number>): Uint32Array {
  const bytes = f32ToF16Bytes(values);
  const words = new Uint32Array(Math.ceil(bytes.byteLength / 4));
  new Uint8Array(words.buffer).set(bytes);
  return words;
}

const KIND_LABEL: Record<AttentionKind, string> = { f32: '', f16kv: ' [f16 K/V]', f16: ' [f16 Q/K/V/out]' };

function attentionCase(name: string, u: AttentionUniforms, o: CaseOpts = {}, kind: AttentionKind = 'f32'): OpCase {
  const req = attentionRequest(u, o);
  const kvn = req.shapes.k.reduce((a, d) => a * d, 1);
  const dt = KIND_DTYPES[kind];
  const pack = (x: Float32Array, f16: boolean) => (f16 ? packF16(x) : x);
  return {
    name: name + KIND_LABEL[kind],
    shapes: req.shapes,
    dtypes: { q: dt.q, k: dt.kv, v: dt.kv },
    attributes: req.attributes,
    only: (v) => attentionKind(v) === kind && attentionFits(v, u) && (!o.only || o.only(v)),
    inputs: (r) => {
      const amp = o.amp ?? 1;
      return {
        q: pack(r.floats(u.seq_len * u.num_heads * u.head_dim, -amp, amp), dt.q === 'float16'),
        k: pack(r.floats(kvn, -amp, amp), dt.kv === 'float16'),
        v: pack(r.floats(kvn), dt.kv === 'float16'),
        kvLen: req.kvLen,
        pageTable: req.pageTable,
      };
    },
  };
}

const A = attentionUniforms;
type Spec = [name: string, u: AttentionUniforms, o?: CaseOpts];
const SPECS: Spec[] = [
  ['decode kv_len 1, MHA, D 64', A({ num_heads: 4, head_dim: 64, kv_len: 1, seq_len: 1 })],
  ['decode kv_len 17, GQA 4:1, D 128', A({ num_heads: 8, num_kv_heads: 2, head_dim: 128, kv_len: 17, seq_len: 1 })],
  ['decode kv_len 300, GQA 2:1, D 16, softcap 5', A({ num_heads: 4, num_kv_heads: 2, head_dim: 16, kv_len: 300, seq_len: 1, attn_softcap: 5 }), { amp: 3 }],
  ['decode kv_len 1100, MQA 8:1, D 80', A({ num_heads: 8, num_kv_heads: 1, head_dim: 80, kv_len: 1100, seq_len: 1 })],
  ['decode kv_len 2048, GQA 2:1, D 64', A({ num_heads: 4, num_kv_heads: 2, head_dim: 64, kv_len: 2048, seq_len: 1 })],
  ['decode kv_len 4096, GQA 4:1, D 128', A({ num_heads: 4, num_kv_heads: 1, head_dim: 128, kv_len: 4096, seq_len: 1 })],
  ['decode kv_len 300, GQA 4:1, D 256, window 100', A({ num_heads: 4, num_kv_heads: 1, head_dim: 256, kv_len: 300, seq_len: 1, sliding_window: 100 })],
  ['decode kv_len 70, D 512, softcap 4', A({ num_heads: 2, head_dim: 512, kv_len: 70, seq_len: 1, attn_softcap: 4 }), { amp: 2 }],
  // the longest prefill on the tiled prefill kernels only (the per-query kernels cover seq 64 below; SwiftShader is slow)
  ['prefill seq 512 start 0, GQA 2:1, D 32', A({ num_heads: 2, num_kv_heads: 1, head_dim: 32, kv_len: 512, seq_len: 512 }), { only: (v) => /^prefill(_f16kv|_f16)?$/.test(v.name) }],
  ['prefill seq 1 start 0, D 64', A({ num_heads: 2, head_dim: 64, kv_len: 1, seq_len: 1 })],
  ['prefill seq 7 start 5, GQA 4:1, D 64', A({ num_heads: 8, num_kv_heads: 2, head_dim: 64, kv_len: 12, seq_len: 7 })],
  ['prefill seq 64 start 0, GQA 4:1, D 128', A({ num_heads: 4, num_kv_heads: 1, head_dim: 128, kv_len: 64, seq_len: 64 })],
  ['prefill seq 45 start 30, window 20, GQA 2:1, D 128', A({ num_heads: 2, num_kv_heads: 1, head_dim: 128, kv_len: 75, seq_len: 45, sliding_window: 20 })],
  ['prefill seq 37 start 20, MHA, D 16', A({ num_heads: 3, head_dim: 16, kv_len: 57, seq_len: 37 })],
  ['prefill seq 20 start 10, sliding window 5, D 32', A({ num_heads: 2, head_dim: 32, kv_len: 30, seq_len: 20, sliding_window: 5 })],
  ['prefill seq 19, softcap 2, GQA 8:1, D 256', A({ num_heads: 8, num_kv_heads: 1, head_dim: 256, kv_len: 19, seq_len: 19, attn_softcap: 2 }), { amp: 2 }],
  ['prefill seq 40 start 9, GQA 2:1, D 256', A({ num_heads: 2, num_kv_heads: 1, head_dim: 256, kv_len: 49, seq_len: 40 })],
  ['prefill seq 21 start 3, GQA 2:1, D 512', A({ num_heads: 4, num_kv_heads: 2, head_dim: 512, kv_len: 24, seq_len: 21 })],
  ['non-causal (encoder) seq 23, D 64', A({ num_heads: 2, head_dim: 64, kv_len: 23, seq_len: 23, is_causal: 0, start_pos: 0 })],
  ['non-causal symmetric window 4, seq 13, D 16', A({ num_heads: 1, head_dim: 16, kv_len: 13, seq_len: 13, is_causal: 0, start_pos: 0, sliding_window: 4 })],
  ['non-causal seq 33, D 128', A({ num_heads: 2, head_dim: 128, kv_len: 33, seq_len: 33, is_causal: 0, start_pos: 0 })],
  ['kv_start 6 (evicted prefix), decode, D 64', A({ num_heads: 2, head_dim: 64, kv_len: 40, seq_len: 1, kv_start: 6 })],
  ['kv_len from the binding (kv_len_source 1), seq 3, D 64', A({ num_heads: 2, head_dim: 64, kv_len: 999, seq_len: 3, start_pos: 12345, kv_len_source: 1 }), { kvLenBuffer: 45 }],
  ['kv_len from the binding (kv_len_source 1), decode, D 256', A({ num_heads: 2, head_dim: 256, kv_len: 999, seq_len: 1, start_pos: 12345, kv_len_source: 1 }), { kvLenBuffer: 77 }],
  ['paged layout (page_size 8), seq 5, D 32', A({ num_heads: 2, head_dim: 32, kv_len: 29, seq_len: 5, kv_layout: 1, page_size: 8 }), { pageTable: [3, 0, 2, 1] }],
  ['paged layout (page_size 16), decode at 69, kv_start 5, GQA 2:1, D 128', A({ num_heads: 4, num_kv_heads: 2, head_dim: 128, kv_len: 70, seq_len: 1, kv_layout: 1, page_size: 16, kv_start: 5 }), { pageTable: [2, 4, 0, 3, 1] }],
  ['ring layout (capacity 16), window 16, decode at 50, D 64', A({ num_heads: 2, head_dim: 64, kv_len: 51, seq_len: 1, kv_layout: 2, page_size: 16, sliding_window: 16, kv_start: 35 })],
  ['decode D 300 (head_dim > workgroup)', A({ num_heads: 1, head_dim: 300, kv_len: 33, seq_len: 1 })],
  ['queries before the first key (kv_start 3): zeros', A({ num_heads: 1, head_dim: 16, kv_len: 8, seq_len: 2, start_pos: 0, kv_start: 3 })],
];

/**
 * Each parameter set once per element-type kind: the f32 kernels run the f32 cases, the f16-KV kernels the same
 * parameters with f16 K/V (f32 Q and output), the f16 kernels with f16 Q, K, V and output; each kernel takes the
 * cases its contract variant accepts (attentionFits). The f16 inputs are exact f16 values, so the reference sees
 * the same numbers as the kernel.
 */
export const ATTENTION_CASES: OpCases = {
  contracts: ['attention', 'attention_kernel'],
  written: ['output'],
  notCovered: () => undefined,
  cases: (['f32', 'f16kv', 'f16'] as const).flatMap((kind) => SPECS.map(([name, u, o]) => attentionCase(name, u, o, kind))),
};
