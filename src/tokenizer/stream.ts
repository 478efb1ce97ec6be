/**
 * Incremental detokenization for streaming generation.
 *
 * Tokens are decoded in a short window: the text of window [prefix, read) is known to have been
 * emitted; after a push, window [prefix, end) is decoded and only the part past the known text is
 * emitted, and only if it does not end in U+FFFD (an incomplete UTF-8 sequence, as produced by a
 * byte-level BPE or byte-fallback token holding part of a character). Decoding a window rather
 * than single tokens keeps decoders that depend on neighbours (SentencePiece's leading-space
 * stripping, byte fusion) correct.
 */

const REPLACEMENT = '\uFFFD';
/** A UTF-8 character spans at most 4 byte tokens; past this, emit whatever decodes. */
const MAX_PENDING = 8;

export class StreamDecoder {
  private readonly ids: number[] = [];
  private prefix = 0;
  private read = 0;
  private emitted = '';

  /** `decode` must decode a token id list to text (without clean-up of spaces). */
  constructor(private readonly decode: (ids: number[]) => string) {}

  /** Add token ids; returns the text completed by them ('' while a character is incomplete). */
  push(...ids: number[]): string {
    this.ids.push(...ids);
    const known = this.decode(this.ids.slice(this.prefix, this.read));
    const full = this.decode(this.ids.slice(this.prefix));
    const pending = this.ids.length - this.read;
    if (full.length <= known.length || (full.endsWith(REPLACEMENT) && pending < MAX_PENDING)) {
      return '';
    }
    const out = full.startsWith(known) ? full.slice(known.length) : full.slice(commonPrefix(known, full));
    this.prefix = this.read;
    this.read = this.ids.length;
    this.emitted += out;
    return out;
  }

  /** Emit whatever remains (an incomplete character decodes as U+FFFD). */
  flush(): string {
    if (this.read === this.ids.length) return '';
    const known = this.decode(this.ids.slice(this.prefix, this.read));
    const full = this.decode(this.ids.slice(this.prefix));
    const out = full.slice(commonPrefix(known, full));
    this.prefix = this.read = this.ids.length;
    this.emitted += out;
    return out;
  }

  /** All text emitted so far. */
  get text(): string {
    return this.emitted;
  }

  /** All token ids pushed so far. */
  get tokenIds(): readonly number[] {
    return this.ids;
  }
}

function commonPrefix(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}
