/**
 * Feature sections in WGSL files. One WGSL file can serve variants with different `requires` lists (rmsnorm.wgsl
 * hosts main and main_subgroup), but `enable subgroups;` makes the whole module fail to compile on a device without
 * the feature. Lines between `// #if <feature>` and `// #endif` (a WebGPU feature name) are kept only when the
 * device has that feature; otherwise they are blanked (line numbers in compiler messages stay right).
 * No nesting, no #else.
 */
export class WgslSectionError extends Error {
  constructor(file: string, line: number, detail: string) {
    super(`${file}:${line}: ${detail} (feature sections are "// #if <feature>" ... "// #endif", not nested)`);
    this.name = 'WgslSectionError';
  }
}

const DIRECTIVE = /^\s*\/\/\s*#(\w+)\s*(\S*)\s*$/;

export function specializeWgsl(code: string, features: ReadonlySet<string>, file = 'wgsl'): string {
  if (!code.includes('#if')) return code;
  const lines = code.split('\n');
  let open: { feature: string; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const m = DIRECTIVE.exec(lines[i]!);
    if (m) {
      const [, word, arg] = m;
      if (word === 'if') {
        if (open) throw new WgslSectionError(file, i + 1, `"#if ${arg}" inside "#if ${open.feature}" (line ${open.line})`);
        if (!arg) throw new WgslSectionError(file, i + 1, '"#if" needs a feature name');
        open = { feature: arg, line: i + 1 };
      } else if (word === 'endif') {
        if (!open) throw new WgslSectionError(file, i + 1, '"#endif" without "#if"');
        open = undefined;
      } else {
        throw new WgslSectionError(file, i + 1, `unknown directive "#${word}"`);
      }
      lines[i] = '';
      continue;
    }
    if (open && !features.has(open.feature)) lines[i] = '';
  }
  if (open) throw new WgslSectionError(file, open.line, `"#if ${open.feature}" is never closed`);
  return lines.join('\n');
}
