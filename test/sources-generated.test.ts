/** The bundled kernel sources and op contract index (scripts/gen-sources.ts) match src/kernels and src/ops/contracts. */
import { describe, expect, it } from 'vitest';
import { staleGenerated } from '../scripts/gen-sources.ts';
import { KERNEL_SOURCES } from '../src/kernels/sources.generated.ts';
import { readKernelFile } from '../src/node/host.ts';
import { OP_CONTRACTS } from '../src/ops/contracts.generated.ts';
import { opContract } from '../src/ops/runner.ts';

describe('generated source modules', () => {
  it('are up to date (run `npx tsx scripts/gen-sources.ts` after changing a kernel or adding a contract)', () => {
    expect(staleGenerated()).toEqual([]);
  });

  it('hold every registry WGSL file and every template byte for byte', () => {
    expect(Object.keys(KERNEL_SOURCES).length).toBeGreaterThan(30);
    for (const [file, text] of Object.entries(KERNEL_SOURCES)) expect(text, file).toBe(readKernelFile(file));
  });

  it('bring every op contract in, valid', () => {
    expect(Object.keys(OP_CONTRACTS)).toContain('linear');
    for (const name of Object.keys(OP_CONTRACTS)) expect(opContract(name).name ?? name).toBeTruthy();
  });
});
