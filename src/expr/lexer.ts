import { ExprError } from './errors.ts';

export type TokenKind = 'num' | 'str' | 'ident' | 'kw' | 'op' | 'eof';

export interface Token {
  kind: TokenKind;
  /** For num: the numeric text; str: the decoded string; ident/kw/op: the text. */
  text: string;
  value?: number;
  pos: number;
  end: number;
}

export const KEYWORDS: ReadonlySet<string> = new Set(['and', 'or', 'not', 'if', 'else', 'true', 'false']);

const OPS2 = ['==', '!=', '<=', '>='];
const OPS1 = '+-*/%<>()[],.';
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', n: '\n', t: '\t', r: '\r' };

const isDigit = (c: string) => c >= '0' && c <= '9';
const isIdentStart = (c: string) => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
const isIdentPart = (c: string) => isIdentStart(c) || isDigit(c);

/** Splits an expression into tokens; the last token is always `eof`. */
export function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const start = i;
    if (isDigit(c) || (c === '.' && isDigit(src[i + 1] ?? ''))) {
      while (isDigit(src[i] ?? '')) i++;
      if (src[i] === '.' && isDigit(src[i + 1] ?? '')) {
        i++;
        while (isDigit(src[i] ?? '')) i++;
      }
      if (src[i] === 'e' || src[i] === 'E') {
        let j = i + 1;
        if (src[j] === '+' || src[j] === '-') j++;
        if (!isDigit(src[j] ?? '')) throw new ExprError('malformed number exponent', src, i);
        i = j;
        while (isDigit(src[i] ?? '')) i++;
      }
      if (isIdentStart(src[i] ?? '')) throw new ExprError(`malformed number "${src.slice(start, i + 1)}"`, src, start);
      const text = src.slice(start, i);
      out.push({ kind: 'num', text, value: Number(text), pos: start, end: i });
      continue;
    }
    if (isIdentStart(c)) {
      while (isIdentPart(src[i] ?? '')) i++;
      const text = src.slice(start, i);
      out.push({ kind: KEYWORDS.has(text) ? 'kw' : 'ident', text, pos: start, end: i });
      continue;
    }
    if (c === '"') {
      i++;
      let s = '';
      for (;;) {
        if (i >= src.length) throw new ExprError('unterminated string (missing closing ")', src, start);
        const d = src[i]!;
        if (d === '"') break;
        if (d === '\\') {
          const e = ESCAPES[src[i + 1] ?? ''];
          if (e === undefined) throw new ExprError(`unknown escape "\\${src[i + 1] ?? ''}" in string`, src, i);
          s += e;
          i += 2;
          continue;
        }
        s += d;
        i++;
      }
      i++;
      out.push({ kind: 'str', text: s, pos: start, end: i });
      continue;
    }
    const two = src.slice(i, i + 2);
    if (OPS2.includes(two)) {
      out.push({ kind: 'op', text: two, pos: start, end: i + 2 });
      i += 2;
      continue;
    }
    if (OPS1.includes(c)) {
      out.push({ kind: 'op', text: c, pos: start, end: i + 1 });
      i++;
      continue;
    }
    const hint = c === "'" ? ' (strings use double quotes)' : c === '=' ? ' (use == to compare)' : c === '&' || c === '|' || c === '!' ? ' (use and / or / not)' : '';
    throw new ExprError(`unexpected character "${c}"${hint}`, src, start);
  }
  out.push({ kind: 'eof', text: '', pos: src.length, end: src.length });
  return out;
}
