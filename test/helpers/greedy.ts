/** Greedy decoding of `maxTokens` tokens after `prompt` (EOS ignored): the token ids, for comparing two decode paths. */
import type { LoadedModel } from '../../src/models/load.ts';
import { decodeTokens } from '../../src/runtime/decode-loop.ts';
import { resolveGenerationOptions } from '../../src/runtime/options.ts';

export async function greedyTokens(model: LoadedModel, prompt: number[], maxTokens: number): Promise<number[]> {
  const out: number[] = [];
  const opts = resolveGenerationOptions({ ignoreEos: true, maxTokens, temperature: 0 }, { eosTokenIds: [] });
  for await (const t of decodeTokens(model.decoder, prompt, opts)) out.push(t.id);
  return out;
}
