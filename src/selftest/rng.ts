/** Seeded RNG for op-test inputs (mulberry32 seeded by an FNV-1a hash of a string), so every case is reproducible. */
export class Rng {
  private s: number;

  constructor(seed: string | number) {
    if (typeof seed === 'number') this.s = seed >>> 0;
    else {
      let h = 0x811c9dc5;
      for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 0x01000193);
      this.s = h >>> 0;
    }
  }

  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  uniform(lo = -1, hi = 1): number {
    return lo + (hi - lo) * this.next();
  }

  /** Standard normal (Box-Muller). */
  normal(): number {
    const u = 1 - this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** n floats uniform in [lo, hi). */
  floats(n: number, lo = -1, hi = 1): Float32Array {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = this.uniform(lo, hi);
    return a;
  }

  /** n floats, standard normal times `scale`. */
  normals(n: number, scale = 1): Float32Array {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = this.normal() * scale;
    return a;
  }

  /** n integers in [0, hi). */
  ints(n: number, hi: number): Uint32Array {
    const a = new Uint32Array(n);
    for (let i = 0; i < n; i++) a[i] = this.int(hi);
    return a;
  }
}
