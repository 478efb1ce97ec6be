/** Greedy decoding of `maxTokens` tokens after `prompt` (EOS ignored): the token ids, for comparing two decode paths. */
import type { LoadedModel } from '../../src/models/load.ts';
import { decodeTokens } from '../../src/runtime/decode-loop.ts';
import type { DecodeSession } from '../../src/runtime/session.ts';
import { resolveGenerationOptions } from '../../src/runtime/options.ts';

export async function greedyTokens(model: LoadedModel, prompt: number[], maxTokens: number, onSession?: (s: DecodeSession) => void): Promise<number[]> {
  const out: number[] = [];
  const opts = resolveGenerationOptions({ ignoreEos: true, maxTokens, temperature: 0 }, { eosTokenIds: [] });
  for await (const t of decodeTokens(model.decoder, prompt, opts, onSession ? { onSession } : {})) out.push(t.id);
  return out;
}
