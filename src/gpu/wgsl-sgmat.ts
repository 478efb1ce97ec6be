/**
 * Subgroup-matrix load/store spelling. Our kernels are written in the form every Dawn with
 * chromium_experimental_subgroup_matrix accepts: `subgroupMatrixLoad<M>(p, offset, colMajor, stride)` and
 * `subgroupMatrixStore(p, offset, value, colMajor, stride)`. Newer Dawn deprecates that form for one with the
 * majorness as a template argument (`subgroupMatrixLoad<M, col_major>(p, offset, stride)`,
 * `subgroupMatrixStore<row_major>(p, offset, value, stride)`) and prints a warning per call on stdout while compiling,
 * which corrupts machine-readable output (`--json`). The pipeline cache probes once per device which form compiles and
 * rewrites the calls when the new one does.
 */

/** A shader that compiles only where the templated majorness form is accepted. */
export const SGMAT_TEMPLATED_PROBE = `enable chromium_experimental_subgroup_matrix;
var<workgroup> s : array<f32, 64>;
@group(0) @binding(0) var<storage, read_write> o : array<f32>;
@compute @workgroup_size(64)
fn main() {
  let a = subgroupMatrixLoad<subgroup_matrix_left<f32, 8, 8>, row_major>(&s, 0u, 8u);
  subgroupMatrixStore<row_major>(&o, 0u, a, 8u);
}
`;

/** End index (exclusive) of the bracketed group opening at `open` (`<...>` or `(...)`), or -1. */
function closing(code: string, open: number, l: string, r: string): number {
  let depth = 0;
  for (let i = open; i < code.length; i++) {
    const c = code[i];
    if (c === l) depth++;
    else if (c === r && --depth === 0) return i + 1;
  }
  return -1;
}

/** Split call arguments at top-level commas (inside `(...)`, without the parentheses). */
function splitArgs(inner: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (c === '(' || c === '<' || c === '[') depth++;
    else if (c === ')' || c === '>' || c === ']') depth--;
    else if (c === ',' && depth === 0) {
      out.push(inner.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(inner.slice(start).trim());
  return out;
}

const MAJOR: Record<string, string> = { true: 'col_major', false: 'row_major' };

/**
 * Rewrite legacy subgroupMatrixLoad / subgroupMatrixStore calls whose majorness is a literal `true` / `false` into the
 * templated form; any other call (already templated, or a non-literal majorness) is left as it is.
 */
export function modernizeSubgroupMatrix(code: string): string {
  const re = /\bsubgroupMatrix(Load|Store)\b/g;
  let out = '';
  let at = 0;
  for (let m = re.exec(code); m; m = re.exec(code)) {
    const name = m[0];
    let p = m.index + name.length;
    let template = '';
    if (m[1] === 'Load') {
      if (code[p] !== '<') continue;
      const end = closing(code, p, '<', '>');
      if (end < 0) continue;
      template = code.slice(p + 1, end - 1);
      p = end;
    }
    if (code[p] !== '(') continue;
    const end = closing(code, p, '(', ')');
    if (end < 0) continue;
    const args = splitArgs(code.slice(p + 1, end - 1));
    const majIndex = m[1] === 'Load' ? 2 : 3;
    if (args.length !== majIndex + 2 || !(args[majIndex]! in MAJOR)) continue;
    const major = MAJOR[args[majIndex]!]!;
    const rest = args.filter((_, i) => i !== majIndex).join(', ');
    const head = m[1] === 'Load' ? `${name}<${template}, ${major}>` : `${name}<${major}>`;
    out += code.slice(at, m.index) + `${head}(${rest})`;
    at = end;
    re.lastIndex = end;
  }
  return out + code.slice(at);
}
