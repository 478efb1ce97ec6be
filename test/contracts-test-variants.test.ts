/**
 * Op contracts carry variants that exist so the op-test harness and kernel tests can pin a registry kernel the
 * models never choose (their description starts with "test-only"). They must never change a model's choice: for
 * every shape, dtype and attribute combination below, on both shipped device profiles, the contract resolves to the
 * same variant with and without them, and never to one of them.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ContractError, resolveContract, type KernelContract } from '../src/contracts/index.ts';
import { capsFromJson } from '../src/gpu/caps.ts';
import { registryLookup } from '../src/registry/binder.ts';
import { defaultRegistry } from '../src/node/registry.ts';
import { opContract } from '../src/selftest/launch.ts';

const kernels = registryLookup(defaultRegistry());
const DEVICES = ['swiftshader', 'nvidia-h200'].map((p) => ({ name: p, caps: capsFromJson(JSON.parse(readFileSync(`spec/device-profiles/${p}.json`, 'utf8')), p) }));
const isTestOnly = (d?: string) => !!d?.startsWith('test-only');

function choice(c: KernelContract, req: Parameters<typeof resolveContract>[1]): string {
  try {
    return resolveContract(c, req).variant;
  } catch (e) {
    if (e instanceof ContractError) return '(none)';
    throw e;
  }
}

function expectSameChoices(name: string, requests: Omit<Parameters<typeof resolveContract>[1], 'device' | 'kernels'>[]): void {
  const c = opContract(name);
  const testOnly = c.variants.filter((v) => isTestOnly(v.description)).map((v) => v.id);
  expect(testOnly.length, `${name} has test-only variants`).toBeGreaterThan(0);
  const without: KernelContract = { ...c, variants: c.variants.filter((v) => !isTestOnly(v.description)) };
  let checked = 0;
  for (const d of DEVICES) {
    for (const r of requests) {
      const req = { ...r, device: d.caps, kernels };
      const got = choice(c, req);
      const where = `${name} on ${d.name}: ${JSON.stringify(r)}`;
      expect(testOnly, where).not.toContain(got);
      expect(got, where).toBe(choice(without, req));
      if (got !== '(none)') checked++;
    }
  }
  expect(checked).toBeGreaterThan(requests.length);
}

describe('test-only variants never change what a model gets', () => {
  it('linear (every weight dtype, decode and prefill rows)', () => {
    const reqs = [];
    for (const w of ['float32', 'float16', 'q4_k', 'q8_0']) {
      for (const M of [1, 2, 4, 5, 8, 9, 64, 300]) {
        for (const [N, K] of [[256, 256], [1000, 512], [33, 2816], [7, 31]]) reqs.push({ shapes: { x: [M, K], w: [N, K] }, dtypes: { w } });
      }
    }
    expectSameChoices('linear', reqs);
  });

  it('sample (greedy, top-k, top-p, any temperature)', () => {
    const reqs = [];
    for (const vocab of [1, 1000, 50000]) {
      for (const temperature of [0, 0.7, 1.5]) {
        for (const top_k of [0, 1, 40, 128, 129]) for (const top_p of [1, 0.9]) reqs.push({ shapes: { logits: [vocab] }, attributes: { temperature, top_k, top_p } });
      }
    }
    expectSameChoices('sample', reqs);
  });
});
