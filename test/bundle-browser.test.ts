/**
 * The core entry (src/index.ts) bundles for the browser: esbuild with platform 'browser' (which refuses `node:`
 * imports it cannot resolve) succeeds, and the output imports or requires no Node built-in module.
 */
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { isEdge, isNodeBuiltin, specifiers } from './node-imports.ts';

const ENTRY = new URL('../src/index.ts', import.meta.url).pathname;

describe('browser bundle of src/index.ts', () => {
  it('builds with platform browser and loads no Node built-in', async () => {
    const result = await build({ entryPoints: [ENTRY], bundle: true, platform: 'browser', format: 'esm', write: false, logLevel: 'silent', metafile: true });
    expect(result.errors).toEqual([]);
    const js = result.outputFiles[0]!.text;
    const nodeImports = specifiers(js).filter(isNodeBuiltin);
    expect(nodeImports).toEqual([]);
    // Nothing under src/node/ or src/cli/ is in the bundle.
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.filter(isEdge)).toEqual([]);
    expect(inputs).toContain('src/kernels/sources.generated.ts');
  }, 60_000);
});
