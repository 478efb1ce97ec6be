/**
 * The registry attention kernels the model's contract (attention.contract.json) names behind the decodeKernel and
 * prefillKernel tunables: with the tunables at their defaults no model choice changes on either shipped device
 * profile; set, each request the kernel fits selects it; and the f32 ones run through the model's contract on this
 * device against the CPU reference (the op-test harness with the tunable set).
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ContractError, resolveContract, type KernelContract } from '../src/contracts/index.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { capsFromJson } from '../src/gpu/caps.ts';
import { registryLookup } from '../src/registry/binder.ts';
import { defaultRegistry } from '../src/node/registry.ts';
import { ATTENTION_CASES } from '../src/selftest/cases-attention.ts';
import { describeFailures, runOp } from '../src/selftest/harness.ts';
import { opContract } from '../src/selftest/launch.ts';
import { testDevice } from './helpers/device.ts';

const reg = defaultRegistry();
const kernels = registryLookup(reg);
const DEVICES = ['swiftshader', 'nvidia-h200'].map((p) => ({ name: p, caps: capsFromJson(JSON.parse(readFileSync(`spec/device-profiles/${p}.json`, 'utf8')), p) }));
const contract = opContract('attention');
const TUNED = contract.variants.filter((v) => v.when?.some((w) => /tunables\.(decodeKernel|prefillKernel)/.test(String(w)))).map((v) => v.id);

type Req = { shapes: Record<string, number[]>; dtypes: Record<string, string>; attributes: Record<string, number> };
function requests(): Req[] {
  const out: Req[] = [];
  for (const kv of ['float32', 'float16']) {
    for (const tokens of [1, 5, 64]) {
      for (const [heads, kvHeads] of [[8, 2], [4, 4]]) {
        for (const headDim of [64, 80, 128, 256, 512]) {
          for (const capacity of [1024, 4096]) {
            out.push({
              shapes: { q: [tokens, heads, headDim], k: [capacity, kvHeads, headDim], v: [capacity, kvHeads, headDim], kvLen: [1], pageTable: [1] },
              dtypes: { k: kv, v: kv },
              attributes: { start_pos: 100, kv_len: 100 + tokens },
            });
          }
        }
      }
    }
  }
  return out;
}

function choice(c: KernelContract, req: Req, device: (typeof DEVICES)[number], tunables?: Record<string, string>): string {
  try {
    return resolveContract(c, { ...req, ...(tunables ? { tunables } : {}), device: device.caps, kernels }).variant;
  } catch (e) {
    if (e instanceof ContractError) return '(none)';
    throw e;
  }
}

describe('attention.contract.json: registry kernels behind decodeKernel / prefillKernel', () => {
  it('names the new kernels, each behind a tunable', () => {
    const named = contract.variants.filter((v) => TUNED.includes(v.id)).map((v) => v.passes[0]!.kernel);
    expect(named).toEqual(
      expect.arrayContaining([
        'attention.decode_subgroup',
        'attention.decode_online_f16kv',
        'attention.decode_online_head256_f16kv',
        'attention.decode_chunked_f16kv',
        'attention.decode_streaming',
        'attention.decode_streaming_f16kv',
        'attention.prefill_head128_f16kv',
        'attention.prefill_head256_f16kv',
        'attention.prefill_head512_f16kv',
        'attention.prefill_streaming',
        'attention.prefill_streaming_f16kv',
      ]),
    );
  });

  it('with the tunables at their defaults, every choice is what it is without these variants', () => {
    const without: KernelContract = { ...contract, variants: contract.variants.filter((v) => !TUNED.includes(v.id)) };
    let checked = 0;
    for (const d of DEVICES) {
      for (const r of requests()) {
        const got = choice(contract, r, d);
        const where = `${d.name}: ${JSON.stringify(r.shapes.q)} k ${r.dtypes.k} capacity ${r.shapes.k[0]}`;
        expect(TUNED, where).not.toContain(got);
        expect(got, where).toBe(choice(without, r, d));
        if (got !== '(none)') checked++;
      }
    }
    expect(checked).toBeGreaterThan(150); // f16 caches have no variant on SwiftShader
  });

  it('with a tunable set, the requests a kernel fits select it (H200 profile)', () => {
    const h200 = DEVICES[1]!;
    const want = (r: Req, t: Record<string, string>): string | undefined => {
      const [tokens, , D] = r.shapes.q as [number, number, number];
      const f16 = r.dtypes.k === 'float16';
      if (t.decodeKernel && tokens === 1) {
        if (D > 512) return undefined;
        if (t.decodeKernel === 'online') return f16 ? (D === 256 ? 'decode_online_head256_f16kv' : 'decode_online_f16kv') : 'decode_online_f32';
        if (t.decodeKernel === 'chunked') return f16 && r.shapes.k[0]! <= 2048 ? 'decode_chunked_f16kv' : undefined;
        if (t.decodeKernel === 'streaming') return f16 ? 'decode_streaming_f16kv' : 'decode_streaming_f32';
      }
      if (t.prefillKernel && tokens > 1) {
        if (t.prefillKernel === 'blocked') return f16 && [128, 256, 512].includes(D) ? `prefill_head${D}_f16kv` : undefined;
        if (t.prefillKernel === 'streaming') return D <= 512 ? (f16 ? 'prefill_streaming_f16kv' : 'prefill_streaming_f32') : undefined;
      }
      return undefined;
    };
    let hits = 0;
    const settings: Record<string, string>[] = [{ decodeKernel: 'online' }, { decodeKernel: 'chunked' }, { decodeKernel: 'streaming' }, { prefillKernel: 'blocked' }, { prefillKernel: 'streaming' }];
    for (const t of settings) {
      for (const r of requests()) {
        const got = choice(contract, r, h200, t);
        const w = want(r, t);
        const where = `${JSON.stringify(t)} ${JSON.stringify(r.shapes.q)} k ${r.dtypes.k} capacity ${r.shapes.k[0]}`;
        if (w) {
          expect(got, where).toBe(w);
          hits++;
        } else {
          expect(TUNED, where).not.toContain(got);
          expect(got, where).toBe(choice(contract, r, h200));
        }
      }
    }
    expect(hits).toBeGreaterThan(100);
  });
});

describe('the f32 kernels through the model contract with the tunable set (this device)', () => {
  let dev: TesseraDevice;
  beforeAll(async () => {
    dev = await testDevice();
  });
  // the f32 cases whose attributes the model's contract declares (contiguous cache, kv_len from the uniform)
  const declared = new Set(Object.keys(contract.attributes ?? {}));
  const cases = ATTENTION_CASES.cases.filter((c) => !c.name.includes('[') && Object.keys(c.attributes ?? {}).every((a) => declared.has(a)));

  const tokens = (c: (typeof cases)[number]) => (c.shapes as Record<string, number[]>).q![0]!;
  for (const [tunables, ids, decode] of [
    [{ decodeKernel: 'online' }, ['attention.decode_subgroup'], true],
    [{ decodeKernel: 'streaming' }, ['attention.decode_streaming'], true],
    [{ prefillKernel: 'streaming' }, ['attention.prefill_streaming'], false],
  ] as const) {
    it(`${JSON.stringify(tunables)}: ${ids.join(', ')}`, async () => {
      const mine = cases.filter((c) => (tokens(c) === 1) === decode && !c.name.startsWith('prefill seq 512'));
      const reports = await runOp(dev, 'attention', { filter: (id) => (ids as readonly string[]).includes(id), cases: mine, tunables: { ...tunables } as unknown as Record<string, number> }); // string tunables pass through
      expect(describeFailures(reports)).toEqual([]);
      for (const r of reports) {
        expect(r.status, r.variant).toBe('ok');
        expect(r.cases.length, r.variant).toBeGreaterThanOrEqual(5);
        for (const c of r.cases) expect(c.contract, `${r.variant} [${c.case}]`).toMatch(/^attention\.(decode|prefill)_(online|streaming)_f32$/);
      }
    });
  }
});
