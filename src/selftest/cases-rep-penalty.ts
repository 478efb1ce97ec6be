/**
 * Op-test cases of `rep_penalty` (registered in cases.ts): repeats within and across 256-entry chunks of the history,
 * padding and out-of-range ids, several rows at an offset. Reference: src/reference/rep-penalty.ts; semantics and
 * binding roles: src/kernels/rep_penalty.wgsl.
 */
import type { RepPenaltyUniforms } from '../reference/rep-penalty.ts';
import type { DispatchFn, OpCase, OpCases } from './cases.ts';

export const REP_PENALTY_DISPATCH: Record<string, DispatchFn> = {
  // one invocation per history entry, one workgroup row per logits row
  'rep_penalty.default': (u) => [Math.ceil(u.history_count! / 256), Math.max(u.batch_count!, 1), 1],
};

function repPenaltyCase(name: string, logitRows: number, u: RepPenaltyUniforms): OpCase {
  return {
    name,
    uniforms: { ...u },
    inputs: (r) => {
      const R = Math.max(u.batch_count, 1);
      const logits = r.floats(logitRows * u.vocab_size, -5, 5);
      logits[u.batch_offset * u.vocab_size + 3] = 0; // zero stays zero
      const history = new Uint32Array(Math.max(1, R * u.history_count));
      for (let i = 0; i < R * u.history_count; i++) {
        const x = r.next();
        history[i] = x < 0.05 ? 0xffffffff : x < 0.08 ? u.vocab_size + 7 : r.int(u.vocab_size);
      }
      if (u.history_count > 3) history[0] = history[2] = history[1]!; // an immediate repeat
      return { binding1: logits, binding2: history, binding3: new Uint32Array(1) };
    },
  };
}

export const REP_PENALTY_CASES: OpCases = {
  written: ['binding1'],
  notCovered: (v) => (v.requires.includes('shader-f16') ? 'f16 logits: no f16 cases yet (cases are f32)' : undefined),
  cases: [
    repPenaltyCase('1 row, 40 ids', 1, { vocab_size: 1000, history_count: 40, penalty: 1.3, batch_count: 1, batch_offset: 0 }),
    repPenaltyCase('700 ids over vocab 300 (repeats across chunks)', 1, { vocab_size: 300, history_count: 700, penalty: 1.8, batch_count: 1, batch_offset: 0 }),
    repPenaltyCase('3 rows at offset 2 of 6', 6, { vocab_size: 500, history_count: 300, penalty: 0.7, batch_count: 3, batch_offset: 2 }),
    repPenaltyCase('batch_count 0 = 1 row at offset 1', 2, { vocab_size: 64, history_count: 9, penalty: 2, batch_count: 0, batch_offset: 1 }),
  ],
};
