/**
 * Op-test cases of `gather`, every variant rendered from src/kernels/templates/gather.wgsl.jinja: f32 or f16 tables
 * (f16 packed in u32 words), f32 or f16 outputs, scalar or vec4 (4 columns per invocation). Each case runs on the
 * variants of its table and output dtype; vec4 variants only on 4-aligned layouts without transpose (the contracts
 * run them only there). Reference: src/reference/gather.ts (f16 tables decoded by gatherF16Ref).
 */
import type { KernelVariant } from '../registry/types.ts';
import type { OpCase, OpCases } from './cases.ts';
import { gatherCase, type GatherOpts } from './cases-small.ts';

/** Variants whose table is f16 (the others read f32). */
const F16_TABLE = new Set(['gather.f16', 'gather.f16_vec4', 'gather.f16_f16_out', 'gather.f16_vec4_f16_out']);

export function gatherKind(v: KernelVariant): { table: 'float32' | 'float16'; out: 'float32' | 'float16'; vec4: boolean } {
  return { table: F16_TABLE.has(v.id) ? 'float16' : 'float32', out: v.outputDtype === 'f16' ? 'float16' : 'float32', vec4: v.id.includes('vec4') };
}

type Shape = [tokens: number, hidden: number, vocab: number, opts?: GatherOpts];

/** Layouts every variant runs (4-aligned, no transpose): vec4 and scalar kernels alike. */
const ALIGNED: Shape[] = [
  [1, 4, 5],
  [3, 128, 50, { outOfRange: 1 }],
  [7, 256, 1000, { index_offset: 2 }],
  [9, 252, 31, { input_hidden_size: 300, hidden_offset: 44 }],
  [64, 1024, 40],
];
/** Layouts only the scalar kernels run (odd widths, transpose, unaligned column slices). */
const SCALAR: Shape[] = [
  [1, 1, 5],
  [3, 127, 50, { outOfRange: 1 }],
  [5, 100, 77, { transpose: 1 }],
  [9, 255, 31, { input_hidden_size: 301, hidden_offset: 45 }],
];

function cases(table: 'float32' | 'float16', out: 'float32' | 'float16'): OpCase[] {
  const mk = (s: Shape, vec4Too: boolean): OpCase => {
    const c = gatherCase(table, s[0], s[1], s[2], { ...(s[3] ?? {}), ...(out === 'float16' ? { out } : {}) });
    return {
      ...c,
      only: (v) => {
        const k = gatherKind(v);
        return k.table === table && k.out === out && (vec4Too || !k.vec4);
      },
    };
  };
  return [...ALIGNED.map((s) => mk(s, true)), ...SCALAR.map((s) => mk(s, false))];
}

/** f32-table f32-output cases beyond the shared ones: a wide table and many tokens. */
const F32_EXTRA: OpCase[] = [
  { ...gatherCase('float32', 64, 4096, 40), only: (v) => gatherKind(v).table === 'float32' && gatherKind(v).out === 'float32' },
  { ...gatherCase('float32', 2000, 64, 500), only: (v) => gatherKind(v).table === 'float32' && gatherKind(v).out === 'float32' },
];

export const GATHER_CASES: OpCases = {
  contracts: ['embed', 'gather'],
  written: ['output'],
  notCovered: (v) => (/litert/.test(v.id) ? 'LiteRT int4 table layout: not described by the registry (no cases)' : undefined),
  cases: [...cases('float32', 'float32'), ...F32_EXTRA, ...cases('float16', 'float32'), ...cases('float32', 'float16'), ...cases('float16', 'float16')],
};
