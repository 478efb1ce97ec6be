/**
 * The registry attention kernels that attention.contract.json names behind its decodeKernel / prefillKernel tunables
 * (TESSERA_TUNABLES) inside real models: the f32 fixtures still match transformers' golden logits and greedy
 * continuations with the prefill through attention.prefill_streaming and the decode steps through
 * attention.decode_subgroup or attention.decode_streaming, and the plans show those kernels ran.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { loadModel } from '../src/models/load.ts';
import type { Plan } from '../src/contracts/index.ts';
import { computeLogits } from '../src/runtime/logits.ts';
import { generate } from '../src/runtime/generate.ts';
import { testDevice } from './helpers/device.ts';
import { tunablesSwitch } from './helpers/tunables.ts';

interface Golden {
  input_ids: number[];
  logits: number[][];
  greedy: { prompt_ids: number[]; new_ids: number[] };
}
const dirOf = (n: string) => `test/fixtures/hf/${n}`;
const golden = (n: string): Golden => JSON.parse(readFileSync(`${dirOf(n)}/golden.json`, 'utf8'));

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});
const tun = tunablesSwitch();
afterEach(tun.restore);

/** The registry kernels of the attention plans a decoder resolved. */
function attentionKernels(decoder: unknown): string[] {
  const plans = (decoder as { ops: { plans: Map<string, Plan> } }).ops.plans;
  return [...new Set([...plans.entries()].filter(([k]) => k.startsWith('attention|')).flatMap(([, p]) => p.passes.map((x) => x.kernel ?? '(template)')))].sort();
}

describe.each([
  ['llama', 'online', 'attention.decode_subgroup'],
  ['gemma3', 'streaming', 'attention.decode_streaming'],
] as const)('%s (f32) with decodeKernel %s and prefillKernel streaming', (name, decodeKernel, decodeId) => {
  it('matches the golden logits and greedy continuation, through the registry kernels', async () => {
    tun.set({ attention: { decodeKernel, prefillKernel: 'streaming' } });
    const g = golden(name);
    const model = await loadModel(dev, dirOf(name), { quant: 'f32', maxPositions: 64 });
    try {
      const r = await computeLogits(model, g.input_ids);
      const V = model.config.vocabSize;
      let worst = 0;
      for (let t = 0; t < g.input_ids.length; t++) {
        const row = r.all.subarray(t * V, (t + 1) * V);
        let d = 0;
        let m = 0;
        for (let i = 0; i < V; i++) {
          d = Math.max(d, Math.abs(row[i]! - g.logits[t]![i]!));
          m = Math.max(m, Math.abs(g.logits[t]![i]!));
        }
        worst = Math.max(worst, d / m);
      }
      expect(worst).toBeLessThan(1e-3);
      const gen = await generate(model, g.greedy.prompt_ids, { maxTokens: g.greedy.new_ids.length, temperature: 0, ignoreEos: true });
      expect(gen.ids).toEqual(g.greedy.new_ids);
      const used = attentionKernels(model.decoder);
      expect(used).toContain('attention.prefill_streaming');
      expect(used).toContain(decodeId);
    } finally {
      model.destroy();
    }
  });
});
