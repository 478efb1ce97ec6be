/**
 * Stop strings over streamed text: text is released only once it cannot be the start of a stop string, and
 * generation ends at the first stop string (which is not emitted).
 */
export class StopStringFilter {
  private pending = '';
  stopped = false;

  constructor(private readonly stops: readonly string[]) {}

  /** Feed newly decoded text; returns the text safe to emit now. */
  push(text: string): string {
    if (this.stopped) return '';
    this.pending += text;
    if (!this.stops.length) {
      const out = this.pending;
      this.pending = '';
      return out;
    }
    let cut = -1;
    for (const s of this.stops) {
      const i = this.pending.indexOf(s);
      if (i >= 0 && (cut < 0 || i < cut)) cut = i;
    }
    if (cut >= 0) {
      this.stopped = true;
      const out = this.pending.slice(0, cut);
      this.pending = '';
      return out;
    }
    // Hold back the longest suffix that is a prefix of some stop string.
    let hold = 0;
    for (const s of this.stops) {
      for (let n = Math.min(s.length - 1, this.pending.length); n > hold; n--) {
        if (this.pending.endsWith(s.slice(0, n))) {
          hold = n;
          break;
        }
      }
    }
    const out = this.pending.slice(0, this.pending.length - hold);
    this.pending = this.pending.slice(this.pending.length - hold);
    return out;
  }

  /** At the end of generation: whatever is held back. */
  flush(): string {
    const out = this.stopped ? '' : this.pending;
    this.pending = '';
    return out;
  }
}
