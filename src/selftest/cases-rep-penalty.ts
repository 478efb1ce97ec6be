/**
 * Op-test cases of `rep_penalty` (registered in cases.ts): repeats within and across 256-entry chunks of the history,
 * padding and out-of-range ids, several rows at an offset. One-row cases run through the model's contract
 * (rep_penalty.contract.json: history length = count), rows at an offset through rep_penalty_rows.contract.json.
 * Reference: src/reference/rep-penalty.ts; semantics and binding roles: src/kernels/rep_penalty.wgsl.
 */
import type { OpCase, OpCases } from './cases.ts';

interface RepCase {
  vocab: number;
  /** history entries per penalized row */
  count: number;
  penalty: number;
  /** rows penalized (0 means 1) and the first of them */
  batch_count: number;
  batch_offset: number;
}

function repPenaltyCase(name: string, logitRows: number, c: RepCase): OpCase {
  const R = Math.max(c.batch_count, 1);
  const oneRow = logitRows === 1 && c.batch_count === 1 && c.batch_offset === 0;
  return {
    name,
    ...(oneRow
      ? { contracts: ['rep_penalty'], shapes: { logits: [c.vocab], history: [c.count] }, attributes: { penalty: c.penalty, count: c.count } }
      : {
          contracts: ['rep_penalty_rows'],
          shapes: { logits: [logitRows, c.vocab], history: [R, c.count] },
          dtypes: { logits: 'float32' },
          attributes: { penalty: c.penalty, batch_count: c.batch_count, batch_offset: c.batch_offset },
        }),
    inputs: (r) => {
      const logits = r.floats(logitRows * c.vocab, -5, 5);
      logits[c.batch_offset * c.vocab + 3] = 0; // zero stays zero
      const history = new Uint32Array(Math.max(1, R * c.count));
      for (let i = 0; i < R * c.count; i++) {
        const x = r.next();
        history[i] = x < 0.05 ? 0xffffffff : x < 0.08 ? c.vocab + 7 : r.int(c.vocab);
      }
      if (c.count > 3) history[0] = history[2] = history[1]!; // an immediate repeat
      return { logits, history };
    },
  };
}

export const REP_PENALTY_CASES: OpCases = {
  contracts: ['rep_penalty', 'rep_penalty_rows'],
  written: ['binding1'],
  notCovered: (v) => (v.requires.includes('shader-f16') ? 'f16 logits: no f16 cases yet (cases are f32)' : undefined),
  cases: [
    repPenaltyCase('1 row, 40 ids', 1, { vocab: 1000, count: 40, penalty: 1.3, batch_count: 1, batch_offset: 0 }),
    repPenaltyCase('700 ids over vocab 300 (repeats across chunks)', 1, { vocab: 300, count: 700, penalty: 1.8, batch_count: 1, batch_offset: 0 }),
    repPenaltyCase('3 rows at offset 2 of 6', 6, { vocab: 500, count: 300, penalty: 0.7, batch_count: 3, batch_offset: 2 }),
    repPenaltyCase('batch_count 0 = 1 row at offset 1', 2, { vocab: 64, count: 9, penalty: 2, batch_count: 0, batch_offset: 1 }),
  ],
};
