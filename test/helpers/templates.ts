/** Kernel templates (src/kernels/templates) rendered in tests, and WGSL compared without comments. */
import { readFileSync } from 'node:fs';
import { Template } from '@huggingface/jinja';

const TEMPLATES = new URL('../../src/kernels/templates/', import.meta.url);
const read = (f: string) => readFileSync(new URL(f, TEMPLATES), 'utf8');

/** Render template `algo` for its variants.json entry `out`, with some vars replaced. */
export function renderTemplate(algo: string, out: string, overrides: Record<string, unknown> = {}): string {
  const entries = JSON.parse(read(`${algo}.variants.json`)) as { out: string; vars: Record<string, unknown> }[];
  const e = entries.find((x) => x.out === out);
  if (!e) throw new Error(`${algo}.variants.json has no entry ${out}`);
  return new Template(read(`${algo}.wgsl.jinja`)).render({ ...e.vars, ...overrides, out });
}

/** WGSL without comments and blank lines. */
export const codeOnly = (s: string) =>
  s
    .replace(/\/\/.*$/gm, '')
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '')
    .join('\n');
