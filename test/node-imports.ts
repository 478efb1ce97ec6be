/**
 * What the tests of DESIGN.md's rule (the core imports no Node built-in; Node-only code sits at the edges) share:
 * test/bundle-browser.test.ts applies it to the browser bundle, test/core-no-node.test.ts to every core source file.
 */
import { builtinModules } from 'node:module';

const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** Whether a module specifier names a Node built-in. */
export const isNodeBuiltin = (s: string): boolean => BUILTINS.has(s) || s.startsWith('node:');

/** Whether a repo-relative path is Node-only code at the edges (src/node/, src/cli/, src/server/, src/node.ts). */
export const isEdge = (path: string): boolean => /^src\/(node|cli|server)\//.test(path) || path === 'src/node.ts';

/** Module specifiers a source or bundle loads: static and dynamic imports, re-exports and require() calls. */
export function specifiers(js: string): string[] {
  const out: string[] = [];
  const patterns = [/\bfrom\s*["']([^"']+)["']/g, /\bimport\s*["']([^"']+)["']/g, /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g, /\brequire\s*\(\s*["']([^"']+)["']\s*\)/g];
  for (const re of patterns) for (const m of js.matchAll(re)) out.push(m[1]!);
  return out;
}
