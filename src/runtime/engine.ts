/**
 * The engine the surfaces share (CLI, server, browser): a loaded model behind prompt encoding, streaming generation
 * that can be cancelled, and log-probabilities of generated tokens. Sequences are handed over as a list
 * (`run`), so a scheduler that batches several sequences into one step changes the engine, not its callers; today
 * the list is served one sequence at a time.
 */
import type { LoadedModel } from '../models/load.ts';
import { requireTokenizer } from '../models/load.ts';
import type { ChatMessage } from '../tokenizer/types.ts';
import { generateTokens, type GenerationResult, type TokenEvent } from './generate.ts';
import { computeLogits } from './logits.ts';
import type { GenerationOptions } from './options.ts';

export interface EngineSequence {
  promptIds: readonly number[];
  options: GenerationOptions;
  /** Aborting stops the sequence after the step in flight (the engine is free again at once). */
  signal?: AbortSignal;
}

export interface TokenLogprob {
  id: number;
  logprob: number;
  /** The `top` most likely tokens at that position, most likely first. */
  top: { id: number; logprob: number }[];
}

export class Engine {
  constructor(
    readonly model: LoadedModel,
    /** The name clients use for the model (OpenAI `model`). */
    readonly name: string,
  ) {}

  /** Longest prompt + completion the KV cache holds. */
  get contextLength(): number {
    return this.model.decoder.maxPositions;
  }

  get tokenizer() {
    return requireTokenizer(this.model, 'the engine');
  }

  /** Messages through the model's chat template, with the assistant turn opened. */
  encodeChat(messages: readonly ChatMessage[]): number[] {
    const tok = this.tokenizer;
    return tok.encode(tok.applyChatTemplate(messages, { addGenerationPrompt: true }), { addSpecialTokens: false });
  }

  encodeText(text: string): number[] {
    return this.tokenizer.encode(text, { addSpecialTokens: true });
  }

  tokenText(id: number): string {
    return this.tokenizer.decode([id], { skipSpecialTokens: false });
  }

  /** One sequence: its tokens as they are sampled, then the result. Aborting ends it with finish reason 'stop'. */
  async *stream(seq: EngineSequence): AsyncGenerator<TokenEvent, GenerationResult & { aborted: boolean }, void> {
    const it = generateTokens(this.model, seq.promptIds, seq.options);
    let aborted = false;
    try {
      for (;;) {
        if (seq.signal?.aborted) {
          aborted = true;
          const r = await it.return(undefined as never);
          return { ...(r.value as GenerationResult), aborted };
        }
        const r = await it.next();
        if (r.done) return { ...r.value, aborted };
        yield r.value;
      }
    } finally {
      await it.return(undefined as never);
    }
  }

  /** Run a list of sequences (one at a time for now); `onEvent` sees each token with its sequence's index. */
  async run(seqs: readonly EngineSequence[], onEvent: (index: number, e: TokenEvent) => void): Promise<(GenerationResult & { aborted: boolean })[]> {
    const out: (GenerationResult & { aborted: boolean })[] = [];
    for (let i = 0; i < seqs.length; i++) {
      const it = this.stream(seqs[i]!);
      for (;;) {
        const r = await it.next();
        if (r.done) {
          out.push(r.value);
          break;
        }
        onEvent(i, r.value);
      }
    }
    return out;
  }

  /**
   * Log-probabilities (log-softmax of the model's logits, before temperature or filtering) of `ids` following
   * `promptIds`, with the `top` most likely tokens at each position: one forward over prompt + completion.
   */
  async logprobs(promptIds: readonly number[], ids: readonly number[], top: number): Promise<TokenLogprob[]> {
    if (!ids.length) return [];
    const seq = [...promptIds, ...ids.slice(0, -1)];
    const { all } = await computeLogits(this.model, seq);
    const V = this.model.config.vocabSize;
    const out: TokenLogprob[] = [];
    for (let i = 0; i < ids.length; i++) {
      const row = all.subarray((promptIds.length - 1 + i) * V, (promptIds.length + i) * V);
      let max = -Infinity;
      for (let v = 0; v < V; v++) if (row[v]! > max) max = row[v]!;
      let sum = 0;
      for (let v = 0; v < V; v++) sum += Math.exp(row[v]! - max);
      const lse = max + Math.log(sum);
      const best: { id: number; logprob: number }[] = [];
      if (top > 0) {
        for (let v = 0; v < V; v++) {
          const lp = row[v]! - lse;
          if (best.length < top || lp > best[best.length - 1]!.logprob) {
            best.push({ id: v, logprob: lp });
            best.sort((a, b) => b.logprob - a.logprob);
            if (best.length > top) best.pop();
          }
        }
      }
      out.push({ id: ids[i]!, logprob: row[ids[i]!]! - lse, top: best });
    }
    return out;
  }
}
