/**
 * Duplicate keys in JSON text. JSON.parse keeps the last value of a repeated key without a word, so a registry or
 * contract edited by hand can silently lose an entry. This scanner walks already-valid JSON text (iteratively, so
 * any nesting depth is fine) and reports every repeated key with its path.
 */

export interface DuplicateKey {
  /** Path of the repeated key, e.g. `operations.matmul.variants.q4.wgsl` or `a[3].b`. */
  path: string;
  key: string;
}

interface Frame {
  kind: 'object' | 'array';
  path: string;
  keys: Set<string>;
  /** object: the key whose value comes next; array: the index of the current element. */
  key: string;
  index: number;
  expectKey: boolean;
}

const IDENT = /^[A-Za-z_$][\w$-]*$/;

export function joinPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  const seg = IDENT.test(key) ? key : JSON.stringify(key);
  return path ? `${path}.${seg}` : seg;
}

/** Every repeated object key in `text` (which must be valid JSON; call after JSON.parse succeeded). */
export function findDuplicateKeys(text: string): DuplicateKey[] {
  const out: DuplicateKey[] = [];
  const stack: Frame[] = [];
  const valuePath = (): string => {
    const top = stack[stack.length - 1];
    if (!top) return '';
    return top.kind === 'object' ? joinPath(top.path, top.key) : joinPath(top.path, top.index);
  };
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      stack.push({ kind: c === 0x7b ? 'object' : 'array', path: valuePath(), keys: new Set(), key: '', index: 0, expectKey: c === 0x7b });
      i++;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
      i++;
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top?.kind === 'object') top.expectKey = true;
      else if (top) top.index++;
      i++;
    } else if (c === 0x22 /* " */) {
      let j = i + 1;
      while (j < n) {
        const d = text.charCodeAt(j);
        if (d === 0x5c /* \ */) j += 2;
        else if (d === 0x22) break;
        else j++;
      }
      const top = stack[stack.length - 1];
      if (top?.kind === 'object' && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) out.push({ path: joinPath(top.path, key), key });
        top.keys.add(key);
        top.key = key;
        top.expectKey = false;
      }
      i = j + 1;
    } else {
      i++;
    }
  }
  return out;
}
