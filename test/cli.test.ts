import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tessera } from './helpers/cli.ts';


describe('tessera CLI', () => {
  it('kernels list --json reports 93 operations and 302 variants', async () => {
    const r = await tessera('kernels', 'list', '--json');
    expect(r.code).toBe(0);
    const ops = JSON.parse(r.stdout) as { operation: string; variants: { id: string; runsOnThisDevice: boolean }[] }[];
    expect(ops).toHaveLength(93);
    expect(ops.reduce((n, o) => n + o.variants.length, 0)).toBe(302);
    const mm = ops.find((o) => o.operation === 'matmul')!;
    expect(mm.variants.find((v) => v.id === 'matmul.f32')!.runsOnThisDevice).toBe(true);
  });

  it('kernels list --device-profile plans for the H200 profile', async () => {
    const r = await tessera('kernels', 'list', '--json', '--device-profile', 'spec/device-profiles/nvidia-h200.json');
    const ops = JSON.parse(r.stdout) as { variants: { runsOnThisDevice: boolean }[] }[];
    expect(ops.every((o) => o.variants.every((v) => v.runsOnThisDevice))).toBe(true);
  });

  it('kernels lint warns about rep_penalty and exits 0', async () => {
    const r = await tessera('kernels', 'lint');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/warning: rep_penalty\.baseUniforms: given as a map/);
    expect(r.stdout).toMatch(/93 operations, 302 variants, 0 errors/);
  });

  it('kernels lint --registry BAD.json exits 1 naming the operation and field', async () => {
    const j = JSON.parse(readFileSync('spec/kernel-registry.json', 'utf8'));
    const f = j.operations.softmax.baseUniforms.fields.find((x: { name: string }) => x.name === 'temperature');
    f.offset = 64;
    const dir = mkdtempSync(join(tmpdir(), 'tessera-'));
    const bad = join(dir, 'BAD.json');
    writeFileSync(bad, JSON.stringify(j));
    const r = await tessera('kernels', 'lint', '--registry', bad);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/softmax\.baseUniforms\.temperature: field at offset 64 \(4 bytes\) ends past the uniform size 16/);
  });

  it('kernels lint on a missing or non-JSON file exits 1 with the reason', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-'));
    writeFileSync(join(dir, 'x.json'), '{ nope');
    const r = await tessera('kernels', 'lint', '--registry', join(dir, 'x.json'));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not valid JSON/);
    const m = await tessera('kernels', 'lint', '--registry', join(dir, 'missing.json'));
    expect(m.code).toBe(1);
    expect(m.stderr).toMatch(/does not exist/);
  });

  it('devices --json shows the adapter, features and limits', async () => {
    const r = await tessera('devices', '--json');
    expect(r.code).toBe(0);
    const d = JSON.parse(r.stdout);
    expect(Object.keys(d)).toEqual(['adapterInfo', 'features', 'limits']);
    console.log(`adapter: ${d.adapterInfo.vendor} ${d.adapterInfo.architecture} (${d.adapterInfo.description})`);
    expect(d.features).toContain('subgroups');
    expect(d.limits.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 << 20);
    expect(typeof d.adapterInfo.subgroupMinSize).toBe('number');
    expect(Array.isArray(d.adapterInfo.subgroupMatrixConfigs)).toBe(true);
  });
});
