/**
 * The core entry (src/index.ts) bundles for the browser: esbuild with platform 'browser' (which refuses `node:`
 * imports it cannot resolve) succeeds, and the output imports or requires no Node built-in module.
 */
import { builtinModules } from 'node:module';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const ENTRY = new URL('../src/index.ts', import.meta.url).pathname;
const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** Module specifiers the bundle still loads: static and dynamic imports, re-exports and require() calls. */
function specifiers(js: string): string[] {
  const out: string[] = [];
  const patterns = [/\bfrom\s*["']([^"']+)["']/g, /\bimport\s*["']([^"']+)["']/g, /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g, /\brequire\s*\(\s*["']([^"']+)["']\s*\)/g];
  for (const re of patterns) for (const m of js.matchAll(re)) out.push(m[1]!);
  return out;
}

describe('browser bundle of src/index.ts', () => {
  it('builds with platform browser and loads no Node built-in', async () => {
    const result = await build({ entryPoints: [ENTRY], bundle: true, platform: 'browser', format: 'esm', write: false, logLevel: 'silent', metafile: true });
    expect(result.errors).toEqual([]);
    const js = result.outputFiles[0]!.text;
    const nodeImports = specifiers(js).filter((s) => BUILTINS.has(s) || s.startsWith('node:'));
    expect(nodeImports).toEqual([]);
    // Nothing under src/node/ or src/cli/ is in the bundle.
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.filter((p) => /^src\/(node|cli|server)\//.test(p) || p === 'src/node.ts')).toEqual([]);
    expect(inputs).toContain('src/kernels/sources.generated.ts');
  }, 60_000);
});
