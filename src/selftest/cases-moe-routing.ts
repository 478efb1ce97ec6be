/**
 * Op-test cases of the MoE routing-side kernels and the row-split embedding lookups: scatter_add (dense, accumulate,
 * vec4, dynamic with/without per-expert scales, f16 expert outputs and f16 weights), moe_offsets and gather_split4 /
 * gather_split8. References: src/reference/moe-combine.ts. f16 tensors are packed two per u32 word (the kernels read
 * and write them as words); each case runs only on the variants whose dtypes and layout it matches.
 */
import type { KernelVariant } from '../registry/types.ts';
import type { OpCase, OpCases } from './cases.ts';
import { packF16 } from './cases-f16.ts';
import { randomQ4KBlocks } from './cases-matmul-quant.ts';
import type { Rng } from './rng.ts';

// ---------------------------------------------------------------------------------------------------------------
// scatter_add

/** Routing: k distinct experts per token from [0, E), then `pad` slots per token set to E (a padding slot). */
function routing(r: Rng, T: number, K: number, E: number, pad: number): Uint32Array {
  const idx = new Uint32Array(T * K);
  for (let t = 0; t < T; t++) {
    const pool = Array.from({ length: E }, (_, i) => i);
    for (let j = 0; j < K; j++) {
      if (j >= K - pad) {
        idx[t * K + j] = E + r.int(3);
        continue;
      }
      const p = r.int(pool.length);
      idx[t * K + j] = pool[p]!;
      pool.splice(p, 1);
    }
  }
  return idx;
}

type ScatterKind = { dynamic: boolean; scaled: boolean; f16: boolean; w16: boolean; vec4: boolean; accumulate: boolean };
export function scatterKind(v: KernelVariant): ScatterKind {
  return {
    dynamic: v.id.includes('dynamic'),
    scaled: v.id.includes('expert_scale'),
    f16: v.id.includes('f16'),
    w16: v.id.includes('w16'),
    vec4: v.id === 'scatter_add.vec4',
    accumulate: v.id === 'scatter_add.accumulate',
  };
}

interface ScatterOpts {
  /** padding slots per token (expert index >= num_experts) */
  pad?: number;
  dynamic?: boolean;
  scaled?: boolean;
  f16?: boolean;
  w16?: boolean;
  accumulate?: boolean;
}

function scatterCase(T: number, H: number, E: number, K: number, o: ScatterOpts = {}): OpCase {
  const pad = o.pad ?? 0;
  const M = T; // max_tokens_per_expert of the dynamic layout: rows = E * M
  const tags = Object.entries(o).filter(([, v]) => v).map(([k, v]) => (v === true ? k : `${k}${v}`));
  const name = `T${T} H${H} E${E} k${K}${tags.length ? ` ${tags.join(' ')}` : ''}`;
  const shapes: Record<string, number[]> = o.dynamic
    ? { expert_out: [E * M, H], indices: [T, K], weights: [T, K], offsets: [T, K], ...(o.scaled ? { scales: [E] } : {}) }
    : { expert_out: [E, T, H], indices: [T, K], weights: [T, K], ...(o.accumulate ? { acc: [T, H] } : {}) };
  const dtypes: Record<string, string> = { ...(o.f16 ? { expert_out: 'float16' } : {}), ...(o.w16 ? { weights: 'float16' } : {}) };
  return {
    name,
    shapes,
    ...(Object.keys(dtypes).length ? { dtypes } : {}),
    ...(o.dynamic ? { attributes: { num_experts: E } } : {}),
    ...(o.accumulate ? { contracts: ['scatter_add_accumulate'] } : {}),
    inputs: (r) => {
      const indices = routing(r, T, K, E, pad);
      const weights = r.floats(T * K, 0, 1);
      const rows = o.dynamic ? E * M : E * T;
      const x = r.normals(rows * H);
      const t: Record<string, Float32Array | Uint32Array> = { expert_out: o.f16 ? packF16(x) : x, indices, weights: o.w16 ? packF16(weights) : weights };
      if (o.dynamic) {
        // each slot's row inside its expert's block (slots of one expert get distinct rows), padding slots anywhere
        const next = new Uint32Array(E + 3);
        t.offsets = Uint32Array.from(indices, (e) => (e < E ? e * M + next[e]!++ : r.int(rows)));
        if (o.scaled) t.scales = r.floats(E, 0.25, 2);
      }
      if (o.accumulate) t.acc = r.normals(T * H);
      return t;
    },
    only: (v) => {
      const k = scatterKind(v);
      return k.dynamic === !!o.dynamic && k.scaled === !!o.scaled && k.f16 === !!o.f16 && k.w16 === !!o.w16 && k.accumulate === !!o.accumulate && (!k.vec4 || H % 4 === 0);
    },
  };
}

const SCATTER_SHAPES: [number, number, number, number, number?][] = [
  [1, 1, 2, 1],
  [1, 4, 8, 2],
  [3, 127, 4, 2, 1],
  [5, 256, 8, 4, 1],
  [17, 96, 32, 4],
  [64, 300, 6, 3, 1],
  [9, 64, 16, 8, 2],
];

export const SCATTER_ADD_CASES: OpCases = {
  contracts: ['scatter_add', 'scatter_add_accumulate'],
  written: ['output'],
  notCovered: () => undefined,
  cases: [
    ...SCATTER_SHAPES.map(([T, H, E, K, pad]) => scatterCase(T, H, E, K, { pad })),
    ...SCATTER_SHAPES.map(([T, H, E, K, pad]) => scatterCase(T, H, E, K, { pad, accumulate: true })),
    ...[false, true].flatMap((f16) =>
      [false, true].flatMap((w16) =>
        f16 || !w16
          ? [false, true].flatMap((scaled) => SCATTER_SHAPES.map(([T, H, E, K, pad]) => scatterCase(T, H, E, K, { pad, dynamic: true, scaled, f16, w16 })))
          : [],
      ),
    ),
  ],
};

// ---------------------------------------------------------------------------------------------------------------
// moe_offsets

/** A gather by expert of a routing (counts and (token, choice) map, `drop`: cap below the busiest expert), offsets pre-filled. */
function offsetsCase(T: number, E: number, K: number, M: number): OpCase {
  return {
    name: `T${T} E${E} k${K} max${M}`,
    shapes: { counts: [E], map: [E, M, 2], offsets: [T, K] },
    inputs: (r) => {
      const idx = routing(r, T, K, E, 0);
      const counts = new Uint32Array(E);
      const map = new Uint32Array(E * M * 2).fill(0xdeadbeef);
      // slots in a shuffled order, as atomics would hand them out
      const order = Array.from({ length: T * K }, (_, i) => i);
      for (let i = order.length - 1; i > 0; i--) {
        const j = r.int(i + 1);
        [order[i], order[j]] = [order[j]!, order[i]!];
      }
      for (const s of order) {
        const e = idx[s]!;
        const i = counts[e]!++;
        if (i < M) {
          map[(e * M + i) * 2] = Math.floor(s / K);
          map[(e * M + i) * 2 + 1] = s % K;
        }
      }
      return { counts, map, offsets: r.ints(T * K, 1 << 20) };
    },
  };
}

export const MOE_OFFSETS_CASES: OpCases = {
  contracts: ['moe_offsets'],
  written: ['token_offsets'],
  notCovered: () => undefined,
  cases: [offsetsCase(1, 2, 1, 1), offsetsCase(4, 8, 2, 4), offsetsCase(33, 8, 2, 6), offsetsCase(300, 32, 4, 300), offsetsCase(1000, 64, 8, 100)],
};

// ---------------------------------------------------------------------------------------------------------------
// gather_split4 / gather_split8

interface SplitOpts {
  index_offset?: number;
  hidden_offset?: number;
  hidden_size?: number;
  /** ids past the vocab (or past the last section) */
  outOfRange?: number;
}

function splitCase(n: 4 | 8, rows: number[], width: number, tokens: number, out: 'float16' | 'float32', o: SplitOpts = {}): OpCase {
  const total = rows.reduce((a, b) => a + b, 0);
  const shapes: Record<string, number[]> = { ids: [(o.index_offset ?? 0) + tokens] };
  rows.forEach((r, k) => (shapes[`table${k}`] = [r, width]));
  const { outOfRange: _o, ...attributes } = o;
  return {
    name: `${out === 'float16' ? 'f16' : 'f32'} out rows ${rows.join('/')} W${width} T${tokens}${Object.entries(o).map(([k, v]) => ` ${k}=${v}`).join('')}`,
    shapes,
    dtypes: { out, ...Object.fromEntries(rows.map((_, k) => [`table${k}`, 'float16'])) },
    attributes,
    inputs: (r) => {
      const ids = r.ints(shapes.ids![0]!, total);
      for (let i = 0; i < (o.outOfRange ?? 0); i++) ids[ids.length - 1 - i] = total + r.int(50);
      // a token in the first and last row of every section
      let start = 0;
      rows.forEach((rw, k) => {
        const at = (o.index_offset ?? 0) + ((2 * k) % tokens);
        if (rw > 0 && at < ids.length - (o.outOfRange ?? 0)) ids[at] = start + (k % 2 ? rw - 1 : 0);
        start += rw;
      });
      const t: Record<string, Uint32Array> = { ids };
      rows.forEach((rw, k) => (t[`table${k}`] = packF16(r.normals(rw * width, 2))));
      return t;
    },
    only: (v) => (v.outputDtype === 'f16' ? 'float16' : 'float32') === out,
  };
}

function splitCases(n: 4 | 8, out: 'float16' | 'float32'): OpCase[] {
  const r = (k: number, base: number[]) => base.slice(0, k);
  return [
    splitCase(n, r(n, [3, 1, 2, 5, 1, 2, 3, 4]), 4, 5, out),
    splitCase(n, r(n, [50, 40, 30, 20, 10, 7, 9, 11]), 64, 17, out, { outOfRange: 2 }),
    splitCase(n, r(n, [100, 100, 100, 57, 33, 33, 33, 1]), 256, 9, out, { index_offset: 3, hidden_offset: 32, hidden_size: 128 }),
    splitCase(n, [7, 0, 9], 12, 8, out),
    splitCase(n, r(n, [1000, 1000, 1000, 1000, 500, 500, 500, 123]), 1024, 40, out),
  ];
}

export const GATHER_SPLIT4_CASES: OpCases = {
  contracts: ['gather_split4'],
  written: ['output'],
  notCovered: () => undefined,
  cases: splitCases(4, 'float16'),
};

export const GATHER_SPLIT8_CASES: OpCases = {
  contracts: ['gather_split8'],
  written: ['output'],
  notCovered: () => undefined,
  cases: [...splitCases(8, 'float16'), ...splitCases(8, 'float32')],
};

// ---------------------------------------------------------------------------------------------------------------
// topk

type TopkKind = { f16: boolean; f16out: boolean; softmax: 0 | 1 | 2 };
export function topkKind(v: KernelVariant): TopkKind {
  const softmax = v.id === 'topk.gptoss_router_topk' ? 2 : v.entryPoint === 'softmax_topk' ? 1 : 0;
  return { f16: v.id.includes('f16') || softmax === 2, f16out: v.outputDtype === 'f16' || v.id.endsWith('_w16'), softmax };
}

/** Rows of scores with ties (values on a coarse grid, so equal values are common; some rows constant). */
function topkCase(rows: number, size: number, k: number, kind: TopkKind): OpCase {
  return {
    name: `rows${rows} size${size} k${k}${kind.f16 ? ' f16' : ''}${kind.f16out ? ' f16out' : ''} softmax${kind.softmax}`,
    shapes: { x: [rows, size] },
    dtypes: { ...(kind.f16 ? { x: 'float16' } : {}), values: kind.f16out ? 'float16' : 'float32' },
    attributes: { k, softmax: kind.softmax },
    // topk.small runs behind the tunable wide (topk.default ignores it)
    ...(kind.softmax === 0 ? { tunables: { wide: true } } : {}),
    inputs: (r) => {
      const x = new Float32Array(rows * size);
      for (let i = 0; i < x.length; i++) x[i] = Math.round(r.normal() * 8) / 4;
      if (rows > 2) x.fill(0.5, size, 2 * size); // row 1: all equal, indices 0 .. k - 1
      // row 2: masked entries (-inf) at every other column from column 1 (ties among them go to the lower column too)
      if (rows > 3 && size > 1) for (let c = 1; c < size; c += 2) x[2 * size + c] = -Infinity;
      return { x: kind.f16 ? packF16(x) : x };
    },
    only: (v) => {
      const k2 = topkKind(v);
      return k2.f16 === kind.f16 && k2.f16out === kind.f16out && k2.softmax === kind.softmax;
    },
  };
}

const TOPK_SHAPES: [number, number, number][] = [
  [1, 1, 1],
  [3, 8, 2],
  [5, 32, 4],
  [7, 128, 8],
  [4, 257, 16],
  [64, 60, 6],
  [2, 1000, 32],
  // k past the finite entries of row 2: masked (-inf) columns are picked, lower column first
  [5, 6, 5],
];

export const TOPK_CASES: OpCases = {
  contracts: ['topk'],
  written: ['values', 'indices'],
  notCovered: () => undefined,
  cases: (
    [
      { f16: false, f16out: false, softmax: 0 },
      { f16: false, f16out: false, softmax: 1 },
      { f16: true, f16out: false, softmax: 1 },
      { f16: true, f16out: true, softmax: 1 },
      { f16: true, f16out: true, softmax: 2 },
    ] as TopkKind[]
  // f16 inputs hold an even number of elements (the reference infers rows from the packed words)
  ).flatMap((kind) => TOPK_SHAPES.map(([rows, size, k]) => topkCase(kind.f16 && (rows * size) % 2 ? rows + 1 : rows, size, k, kind))),
};

// ---------------------------------------------------------------------------------------------------------------
// lm_head_argmax (phase1 through lm_head_argmax_phase1, phase2 through lm_head_argmax_phase2)

const Q4K_BLOCK_BYTES = 144;

interface LmHeadOpts {
  pad?: number;
  softcap?: number;
  transpose_b?: 0 | 1;
}

/** Phase 1: hidden [H], weights [V, H] (or [H, V]) with some rows duplicated (equal logits: ties to the lower column). */
function lmHeadPhase1Case(format: 'float16' | 'q4_k', V: number, H: number, o: LmHeadOpts = {}): OpCase {
  const tb = o.transpose_b ?? 1;
  return {
    name: `phase1 ${format} V${V} H${H}${o.pad !== undefined ? ` pad${o.pad}` : ''}${o.softcap ? ` softcap${o.softcap}` : ''}${tb === 0 ? ' transposed' : ''}`,
    shapes: { hidden: [H], weights: tb ? [V, H] : [H, V] },
    dtypes: { weights: format },
    attributes: { transpose_b: tb, ...(o.pad !== undefined ? { pad_token_id: o.pad } : {}), ...(o.softcap ? { logit_softcap: o.softcap } : {}) },
    contracts: ['lm_head_argmax_phase1'],
    inputs: (r) => {
      const hidden = r.normals(H);
      // duplicated rows: c + 1 copies row c for every 7th c (tb = 1: rows are contiguous)
      const dupes = Array.from({ length: V - 1 }, (_, c) => c).filter((c) => c % 7 === 3);
      if (format === 'q4_k') {
        const rowBytes = (H / 256) * Q4K_BLOCK_BYTES;
        const b = randomQ4KBlocks(r, (V * H) / 256);
        for (const c of dupes) b.copyWithin((c + 1) * rowBytes, c * rowBytes, (c + 1) * rowBytes);
        return { hidden, weights: new Uint32Array(b.buffer, b.byteOffset, b.byteLength / 4) };
      }
      const w = r.normals(V * H, 0.5);
      for (const c of dupes) for (let k = 0; k < H; k++) w[tb ? (c + 1) * H + k : k * V + c + 1] = w[tb ? c * H + k : k * V + c]!;
      return { hidden, weights: packF16(w) };
    },
    only: (v) => v.entryPoint === 'phase1' && v.id.includes('q4k') === (format === 'q4_k'),
  };
}

/** Phase 2: G (logit, column) entries with repeated logits, tokens [n] in place. */
function lmHeadPhase2Case(format: 'f16' | 'q4_k', G: number, n: number, outputIndex: number): OpCase {
  return {
    name: `phase2 ${format} groups${G} tokens${n} at${outputIndex}`,
    shapes: { temp_logits: [G], temp_indices: [G], tokens: [n] },
    attributes: { output_index: outputIndex, weight_format: format },
    contracts: ['lm_head_argmax_phase2'],
    inputs: (r) => {
      const temp_logits = Float32Array.from({ length: G }, () => Math.round(r.normal() * 4) / 2);
      const temp_indices = Uint32Array.from({ length: G }, (_, g) => 64 * g + r.int(64));
      return { temp_logits, temp_indices, tokens: r.ints(n, 1 << 20) };
    },
    only: (v) => v.entryPoint === 'phase2' && v.id.includes('q4k') === (format === 'q4_k'),
  };
}

export const LM_HEAD_ARGMAX_CASES: OpCases = {
  contracts: ['lm_head_argmax_phase1', 'lm_head_argmax_phase2'],
  written: ['temp_logits', 'temp_indices', 'output'],
  notCovered: () => undefined,
  cases: [
    lmHeadPhase1Case('float16', 1, 1),
    lmHeadPhase1Case('float16', 100, 64, { pad: 5 }),
    lmHeadPhase1Case('float16', 1000, 128, { softcap: 30 }),
    lmHeadPhase1Case('float16', 300, 17, { transpose_b: 0, pad: 64 }),
    lmHeadPhase1Case('float16', 4100, 48, { pad: 4099 }),
    lmHeadPhase1Case('float16', 64, 300),
    lmHeadPhase1Case('q4_k', 10, 256),
    lmHeadPhase1Case('q4_k', 200, 512, { pad: 7 }),
    lmHeadPhase1Case('q4_k', 1000, 256, { softcap: 30 }),
    lmHeadPhase1Case('q4_k', 65, 256, { pad: 64 }),
    lmHeadPhase1Case('q4_k', 3000, 256),
    ...(['f16', 'q4_k'] as const).flatMap((f) => [lmHeadPhase2Case(f, 1, 1, 0), lmHeadPhase2Case(f, 5, 8, 3), lmHeadPhase2Case(f, 300, 4, 1), lmHeadPhase2Case(f, 1000, 16, 15), lmHeadPhase2Case(f, 2049, 2, 1)]),
  ],
};

// ---------------------------------------------------------------------------------------------------------------
// moe_gather (single_pass; the count / gather pair is not recoverable from the registry)

function moeGatherCase(T: number, H: number, E: number, K: number, M: number, pad = 0): OpCase {
  return {
    name: `T${T} H${H} E${E} k${K} max${M}${pad ? ` pad${pad}` : ''}`,
    shapes: { x: [T, H], assignments: [T, K] },
    attributes: { num_experts: E, max_tokens_per_expert: M },
    inputs: (r) => ({ x: r.normals(T * H), assignments: routing(r, T, K, E, pad) }),
  };
}

export const MOE_GATHER_CASES: OpCases = {
  contracts: ['moe_gather'],
  written: ['output'],
  notCovered: () => undefined,
  cases: [
    moeGatherCase(1, 1, 1, 1, 1),
    moeGatherCase(4, 8, 4, 2, 4),
    moeGatherCase(9, 33, 8, 2, 3, 1),
    moeGatherCase(40, 64, 8, 4, 40),
    moeGatherCase(300, 16, 4, 2, 290),
    moeGatherCase(64, 100, 32, 4, 10, 1),
  ],
};
