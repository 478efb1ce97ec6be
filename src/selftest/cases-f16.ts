/**
 * f16 twins of op-test cases: the same shapes and seeded values with the activation inputs rounded to f16 and packed
 * two per u32 word (low half first), run on the f16 kernels (rendered from the same templates as the f32 ones); the
 * CPU reference widens them (src/reference/ops.ts f32OrPackedF16) and the harness compares the f16 outputs with the
 * f16 tolerance. On devices without shader-f16 the f16 variants report the missing feature instead.
 * Also the residual cases (f32, vec4, f16, vec4 f16).
 */
import { f32ToF16 } from '../formats/f16.ts';
import type { KernelVariant } from '../registry/types.ts';
import type { OpCase, OpCases } from './cases.ts';

/** f32 values rounded to f16 and packed two per u32 word. */
export function packF16(values: ArrayLike<number>): Uint32Array {
  const w = new Uint32Array(Math.ceil(values.length / 2));
  for (let i = 0; i < values.length; i++) w[i >> 1]! |= f32ToF16(values[i]!) << (16 * (i & 1));
  return w;
}

/** The f16 form of a case: `names` (its activation inputs) rounded to f16 and declared float16. */
export function f16Case(c: OpCase, names: readonly string[]): OpCase {
  return {
    ...c,
    name: `f16 ${c.name}`,
    dtypes: { ...c.dtypes, ...Object.fromEntries(names.map((n) => [n, 'float16'])) },
    inputs: (r) => {
      const t = { ...c.inputs(r) };
      for (const n of names) if (t[n] instanceof Float32Array) t[n] = packF16(t[n]);
      return t;
    },
  };
}

/**
 * An operation's cases plus their f16 twins: the f32 cases keep to the variants they covered, the twins run on the
 * variants `isF16` accepts (all of them unless `twinIf` leaves a case out).
 */
export function withF16Twins(base: OpCases, isF16: (v: KernelVariant) => boolean, names: readonly string[], twinIf: (c: OpCase) => boolean = () => true): OpCases {
  return {
    contracts: base.contracts,
    written: base.written,
    notCovered: (v) => (isF16(v) ? undefined : base.notCovered(v)),
    cases: [
      ...base.cases.map((c) => ({ ...c, only: (v: KernelVariant) => !isF16(v) && (c.only ? c.only(v) : true) })),
      ...base.cases.filter(twinIf).map((c) => ({ ...f16Case(c, names), only: (v: KernelVariant) => isF16(v) && (c.only ? c.only(v) : true) })),
    ],
  };
}

// ---------------------------------------------------------------------------------------------------------------
const MAX_WG = 65535;

/** a + scale * b over `size` elements. */
function residualCase(size: number, scale = 1): OpCase {
  return {
    name: `n${size}${scale !== 1 ? ` s${scale}` : ''}`,
    shapes: { a: [size], b: [size] },
    attributes: { scale },
    inputs: (r) => ({ a: r.floats(size), b: r.floats(size) }),
  };
}

const isVec4 = (v: KernelVariant) => v.entryPoint === 'add_vec4';
const f16Residual = (v: KernelVariant) => v.requires.includes('shader-f16');
const SIZES: [number, number?][] = [[1], [3, 0.5], [127], [257, -2], [1000], [4096 * 7 + 1, 0.25], [MAX_WG * 256 + 1001]];
/** Sizes the vec4 kernels run (multiples of 4, one past 65535 workgroups of 64 vec4s). */
const VEC4_SIZES: [number, number?][] = [[4], [128, 0.5], [1000, -2], [4096 * 7, 0.25], [(MAX_WG * 64 + 17) * 4]];

/** residual: f32 and f16 (a, b, out), scalar and vec4 (the vec4 f32 kernel runs with the contract's tunable vec4). */
export const RESIDUAL_CASES: OpCases = {
  contracts: ['residual'],
  written: ['output'],
  notCovered: () => undefined,
  cases: [
    ...SIZES.map(([n, s]) => ({ ...residualCase(n, s), only: (v: KernelVariant) => !f16Residual(v) && !isVec4(v) })),
    ...VEC4_SIZES.map(([n, s]) => ({ ...residualCase(n, s), name: `vec4 n${n}${s ? ` s${s}` : ''}`, tunables: { vec4: true }, only: (v: KernelVariant) => !f16Residual(v) && isVec4(v) })),
    ...SIZES.slice(0, 6).map(([n, s]) => ({ ...f16Case(residualCase(n, s), ['a', 'b']), only: (v: KernelVariant) => f16Residual(v) && !isVec4(v) })),
    ...VEC4_SIZES.slice(0, 4).map(([n, s]) => ({ ...f16Case(residualCase(n, s), ['a', 'b']), name: `f16 vec4 n${n}${s ? ` s${s}` : ''}`, only: (v: KernelVariant) => f16Residual(v) && isVec4(v) })),
  ],
};
