/**
 * DESIGN.md: the core (everything below the surfaces) imports no Node built-in; Node-only code sits at the edges
 * (src/node/, src/cli/, src/server/, src/node.ts). test/bundle-browser.test.ts checks what the browser entry bundles;
 * this checks every source file of the core, reachable from that entry or not, for a Node built-in module named in a
 * static or dynamic import or taken from the running process, and for an import of an edge module.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isEdge, isNodeBuiltin, specifiers } from './node-imports.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return /\.(ts|mts|js|mjs)$/.test(e.name) ? [p] : [];
  });
}

/** What in one core file breaks the rule, as messages naming the file. */
function violations(file: string, text: string): string[] {
  const out: string[] = [];
  for (const s of specifiers(text)) {
    if (isNodeBuiltin(s)) out.push(`${file} imports the Node built-in '${s}'`);
    else if (s.startsWith('.')) {
      const target = join(file, '..', s).replace(/\\/g, '/');
      if (isEdge(target)) out.push(`${file} imports the Node-only module ${target}`);
    }
  }
  if (/\bgetBuiltinModule\b/.test(text)) out.push(`${file} takes a Node built-in from process.getBuiltinModule`);
  return out;
}

describe('the core imports no Node built-in (DESIGN.md)', () => {
  it('finds what it looks for (the checker itself)', () => {
    expect(violations('src/formats/x.ts', "import { readFileSync } from 'node:fs';")).toHaveLength(1);
    expect(violations('src/formats/x.ts', "import * as path from 'path';")).toHaveLength(1);
    expect(violations('src/formats/x.ts', "const fs = await import('node:fs');")).toHaveLength(1);
    expect(violations('src/formats/x.ts', "const fs = process.getBuiltinModule('node:fs');")).toHaveLength(1);
    expect(violations('src/formats/x.ts', "export { openPath } from '../node/files.ts';")).toEqual(['src/formats/x.ts imports the Node-only module src/node/files.ts']);
    expect(violations('src/formats/x.ts', "import type { Plan } from '../contracts/plan.ts';\nimport { nodeGpu } from './node-ish.ts';")).toEqual([]);
  });

  it('holds for every source file outside src/node, src/cli, src/server and src/node.ts', () => {
    const core = sources(SRC)
      .map((p) => relative(ROOT, p).replace(/\\/g, '/'))
      .filter((f) => !isEdge(f));
    expect(core.length).toBeGreaterThan(100);
    const found = core.flatMap((f) => violations(f, readFileSync(join(ROOT, f), 'utf8')));
    expect(found).toEqual([]);
  });
});
