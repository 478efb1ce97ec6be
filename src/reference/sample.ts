/**
 * CPU reference of the `sample` operation (f64 sums): greedy argmax and temperature / top-k / top-p sampling with the
 * kernels' counter-based RNG, so a test can predict the exact token a seed draws. Parameters are the registry's
 * `sample` uniform fields; the semantics are documented in src/kernels/sample.wgsl.
 */

/** The registry's `sample` uniform fields. */
export interface SampleUniforms {
  vocab_size: number;
  temperature: number;
  top_k: number;
  top_p: number;
  random_seed: number;
}

/** Candidates of the multi-phase top-k path (KMAX in sample.wgsl). */
export const TOPK_PATH_KMAX = 128;

/** PCG RXS-M-XS hash of a u32 (Jarzynski & Olano 2020), as the kernels compute it. */
export function pcgHash(v: number): number {
  const state = (Math.imul(v >>> 0, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

/** The draw of a seed in [0, 1): 24 bits of its hash. */
export function uniform01(seed: number): number {
  return (pcgHash(seed) >>> 8) / 16777216;
}

/** Index of the largest value; ties go to the lowest index (torch.argmax). -1 for an empty row. */
export function argmaxRef(logits: ArrayLike<number>, n = logits.length): number {
  let best = -1;
  for (let i = 0; i < n; i++) if (best < 0 || logits[i]! > logits[best]!) best = i;
  return best;
}

export interface SampleResult {
  token: number;
  /** Probability of each token after the warpers (0 outside the kept set). */
  probs: Float64Array;
  /** Distance of u * total from the nearest bucket edge, relative to the total (small: f32 may pick a neighbour). */
  margin: number;
}

/**
 * Sample one token. mode `single_pass`: HF semantics (top-k keeps every token tied with the k-th value);
 * `topk_path`: the multi-phase kernels (exactly K = min(top_k || KMAX, KMAX) candidates, ties by lowest id, and
 * top-p over that rank order).
 */
export function sampleRef(logits: ArrayLike<number>, u: SampleUniforms, mode: 'single_pass' | 'topk_path' = 'single_pass'): SampleResult {
  const V = u.vocab_size;
  const probs = new Float64Array(V);
  if (!(u.temperature > 0) || V === 0) {
    const t = Math.max(0, argmaxRef(logits, V));
    if (V > 0) probs[t] = 1;
    return { token: t, probs, margin: 1 };
  }
  // z in f32, as the kernels divide.
  const z = new Float64Array(V);
  let m = -Infinity;
  for (let i = 0; i < V; i++) {
    z[i] = Math.fround(logits[i]! / u.temperature);
    m = Math.max(m, z[i]!);
  }
  const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => z[b]! - z[a]! || a - b);
  const e = (i: number) => Math.exp(z[i]! - m);
  let cand: number[];
  if (mode === 'topk_path') {
    const k = u.top_k > 0 ? Math.min(u.top_k, TOPK_PATH_KMAX) : TOPK_PATH_KMAX;
    cand = order.slice(0, k);
  } else if (u.top_k > 0 && u.top_k < V) {
    const zk = z[order[u.top_k - 1]!]!;
    cand = order.filter((i) => z[i]! >= zk);
  } else {
    cand = order;
  }
  let kept = cand;
  if (u.top_p < 1) {
    let total = 0;
    for (const i of cand) total += e(i);
    const thr = u.top_p * total;
    if (mode === 'topk_path') {
      // mass of the candidates ranked above, in rank order
      let above = 0;
      kept = [];
      for (const [r, i] of cand.entries()) {
        if (r === 0 || above < thr) kept.push(i);
        above += e(i);
      }
    } else {
      // mass of the strictly larger values; the largest value is always kept
      kept = [];
      let above = 0;
      let r = 0;
      while (r < cand.length) {
        let s = r;
        let groupMass = 0;
        while (s < cand.length && z[cand[s]!] === z[cand[r]!]) groupMass += e(cand[s++]!);
        if (r === 0 || above < thr) for (let j = r; j < s; j++) kept.push(cand[j]!);
        above += groupMass;
        r = s;
      }
    }
  }
  kept = [...kept].sort((a, b) => a - b);
  let total = 0;
  for (const i of kept) total += e(i);
  for (const i of kept) probs[i] = e(i) / total;
  const goal = uniform01(u.random_seed) * total;
  let run = 0;
  let token = kept[kept.length - 1]!;
  let margin = Infinity;
  let found = false;
  for (const i of kept) {
    run += e(i);
    margin = Math.min(margin, Math.abs(run - goal) / total);
    if (!found && run > goal) {
      token = i;
      found = true;
    }
  }
  return { token, probs, margin };
}
