/** `tessera generate`, `tessera chat`, `tessera logits`: run a decoder LLM from an HF folder or a GGUF file. */
import type { Command } from 'commander';
import { createInterface } from 'node:readline/promises';
import { fileURLToPath } from 'node:url';
import type { TesseraDevice } from '../gpu/device.ts';
import { MissingTokenizerError } from '../models/errors.ts';
import { openModel, requireTokenizer, type LoadedModel } from '../models/load.ts';
import type { ModelSource } from '../models/source.ts';
import { checkTokenIds, parseTokenIds } from '../models/token-ids.ts';
import { QUANT_MODES, type QuantMode } from '../models/weights.ts';
import type { GenerationOptions } from '../runtime/options.ts';
import { CliArgumentError } from './errors.ts';

export const DEFAULT_MODEL = fileURLToPath(new URL('../../models/default/', import.meta.url));

/** --ids: decimal syntax checked at once; the range once the model's vocab_size is known (before the GPU is touched). */
function idsFor(src: ModelSource, text: string): number[] {
  const ids = parseTokenIds(text, '--ids', src.config.vocabSize);
  checkTokenIds(ids, src.config.vocabSize, '--ids');
  return ids;
}

const textOmitted = (file: string) => `text omitted: ${file} does not exist, so ids cannot be turned into text (ids only)`;

function numberOpt(flag: string, v: string | undefined, int = false): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || (int && !Number.isInteger(n))) throw new CliArgumentError(`${flag}: expected ${int ? 'an integer' : 'a number'}, got "${v}"`);
  return n;
}

function quantOpt(v: string | undefined): QuantMode | undefined {
  if (v === undefined) return undefined;
  if (!(QUANT_MODES as readonly string[]).includes(v)) throw new CliArgumentError(`--quant: "${v}" is not one of ${QUANT_MODES.join(', ')}`);
  return v as QuantMode;
}

/**
 * Load with a progress line on stderr (a bar when stderr is a terminal). Given a path, the model is opened and
 * checked (config, tensors) before the GPU device is created.
 */
export async function loadWithProgress(from: string | ModelSource, quant?: QuantMode, quiet = false, maxPositions?: number): Promise<{ dev: TesseraDevice; model: LoadedModel }> {
  const { createDevice } = await import('../gpu/device.ts');
  const { loadModelFromSource } = await import('../models/load.ts');
  const src = typeof from === 'string' ? await openModel(from) : from;
  const path = src.path;
  const dev = await createDevice();
  const tty = process.stderr.isTTY && !quiet;
  let lastPct = -1;
  const t0 = performance.now();
  try {
    const model = await loadModelFromSource(dev, src, {
      ...(maxPositions ? { maxPositions } : {}),
      quant,
      onProgress: (p) => {
        if (quiet) return;
        const pct = Math.floor((p.index / p.total) * 100);
        if (tty) process.stderr.write(`\rloading ${path}: ${String(pct).padStart(3)}% (${p.index}/${p.total} tensors, ${(p.bytes / 2 ** 20).toFixed(1)} MiB)`);
        else if (pct >= lastPct + 25 || p.index === p.total) {
          process.stderr.write(`loading ${path}: ${pct}% (${p.index}/${p.total} tensors)\n`);
          lastPct = pct;
        }
      },
    });
    if (!quiet) {
      const s = Object.entries(model.weights.storage).map(([k, n]) => `${n} ${k}`).join(', ');
      process.stderr.write(
        `${tty ? '\n' : ''}loaded ${model.config.architecture} (${model.config.numLayers} layers, hidden ${model.config.hiddenSize}) in ${((performance.now() - t0) / 1000).toFixed(1)} s; linear weights: ${s}; ${(model.weights.bytes / 2 ** 20).toFixed(1)} MiB on ${dev.caps.adapterInfo.vendor} ${dev.caps.adapterInfo.architecture || dev.caps.adapterInfo.device}\n`,
      );
      for (const n of model.weights.notes) process.stderr.write(`note: ${n}\n`);
    }
    return { dev, model };
  } catch (e) {
    dev.destroy();
    throw e;
  }
}

interface GenFlags {
  model: string;
  prompt?: string;
  ids?: string;
  maxTokens?: string;
  temperature?: string;
  topK?: string;
  topP?: string;
  repetitionPenalty?: string;
  seed?: string;
  stop?: string[];
  quant?: string;
  chat?: boolean;
  json?: boolean;
}

function genOptions(f: GenFlags): GenerationOptions {
  return {
    maxTokens: numberOpt('--max-tokens', f.maxTokens, true),
    temperature: numberOpt('--temperature', f.temperature),
    topK: numberOpt('--top-k', f.topK, true),
    topP: numberOpt('--top-p', f.topP),
    repetitionPenalty: numberOpt('--repetition-penalty', f.repetitionPenalty),
    seed: numberOpt('--seed', f.seed, true),
    stop: f.stop,
  };
}

function withGenerationFlags(cmd: Command): Command {
  return cmd
    .option('--model <path>', 'HF model folder or .gguf file', DEFAULT_MODEL)
    .option('--max-tokens <n>', 'tokens to generate', '128')
    .option('--temperature <t>', '0 = greedy')
    .option('--top-k <k>', 'keep the k most likely tokens (0 = off)')
    .option('--top-p <p>', 'nucleus sampling mass (1 = off)')
    .option('--repetition-penalty <r>', 'HF repetition penalty (1 = off)')
    .option('--seed <s>', 'random seed for sampling')
    .option('--stop <text...>', 'stop when the output contains this text')
    .option('--quant <mode>', `weights on the GPU: ${QUANT_MODES.join(' | ')} (auto: f16 where the device has shader-f16, else f32; GGUF keeps its types)`);
}

export function registerModelCommands(program: Command): void {
  withGenerationFlags(
    program
      .command('generate')
      .description('generate text from a prompt (streams; ends with prefill and decode speed)')
      .option('--prompt <text>', 'prompt text (encoded with the model\'s tokenizer)')
      .option('--ids <ids>', 'prompt as comma-separated token ids')
      .option('--chat', 'wrap the prompt in the model\'s chat template as a user message')
      .option('--json', 'print one JSON object { ids, text, prefillTokensPerSecond, decodeTokensPerSecond }'),
  ).action(async (f: GenFlags) => {
    if ((f.prompt === undefined) === (f.ids === undefined)) throw new CliArgumentError('--prompt/--ids: give exactly one of --prompt TEXT or --ids 1,2,3');
    const opts = genOptions(f);
    const { generateTokens } = await import('../runtime/generate.ts');
    const src = await openModel(f.model);
    let promptIds: number[];
    if (f.ids !== undefined) promptIds = idsFor(src, f.ids);
    else {
      const tok = requireTokenizer(src, f.chat ? '--chat' : '--prompt');
      promptIds = f.chat
        ? tok.encode(tok.applyChatTemplate([{ role: 'user', content: f.prompt! }], { addGenerationPrompt: true }), { addSpecialTokens: false })
        : tok.encode(f.prompt!, { addSpecialTokens: true });
    }
    if (f.stop?.length && !src.tokenizer) throw new MissingTokenizerError(src.tokenizerFile, '--stop');
    const { dev, model } = await loadWithProgress(src, quantOpt(f.quant), Boolean(f.json));
    try {
      const hasText = model.tokenizer !== null;
      const it = generateTokens(model, promptIds, opts);
      let r = await it.next();
      if (!f.json && f.prompt !== undefined && !f.chat) process.stdout.write(f.prompt);
      let n = 0;
      while (!r.done) {
        if (!f.json) process.stdout.write(hasText ? r.value.text : `${n++ ? ',' : ''}${r.value.token}`);
        r = await it.next();
      }
      const res = r.value;
      const speeds = { finishReason: res.finishReason, promptTokens: res.promptTokens, prefillTokensPerSecond: res.prefillTokensPerSecond, decodeTokensPerSecond: res.decodeTokensPerSecond };
      if (f.json) {
        const text = hasText ? { text: res.text } : { textOmitted: textOmitted(model.tokenizerFile) };
        process.stdout.write(JSON.stringify({ ids: res.ids, ...text, ...speeds }) + '\n');
      } else {
        process.stdout.write('\n');
        if (!hasText) process.stderr.write(`note: ${textOmitted(model.tokenizerFile)}\n`);
        process.stderr.write(
          `\n[${res.ids.length} tokens, stopped: ${res.finishReason}] prefill ${res.promptTokens} tokens at ${res.prefillTokensPerSecond.toFixed(1)} tok/s; decode ${res.decodeTokensPerSecond.toFixed(1)} tok/s\n`,
        );
      }
    } finally {
      model.destroy();
      dev.destroy();
    }
  });

  withGenerationFlags(program.command('chat').description('interactive chat with the model\'s chat template (empty line or Ctrl-D quits)')).action(async (f: GenFlags) => {
    const opts = genOptions(f);
    const { generateTokens } = await import('../runtime/generate.ts');
    const src = await openModel(f.model);
    const tok = requireTokenizer(src, 'tessera chat');
    const { dev, model } = await loadWithProgress(src, quantOpt(f.quant));
    const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
    rl.setPrompt('> ');
    // Lines are read through the async iterator: it buffers lines typed (or piped) during generation and ends
    // cleanly at end of input (Ctrl-D, a closed pipe, < /dev/null), which then exits 0.
    const lines = rl[Symbol.asyncIterator]();
    const messages: { role: string; content: string }[] = [];
    try {
      for (;;) {
        rl.prompt();
        const next = await lines.next();
        if (next.done) {
          process.stdout.write('\n');
          break;
        }
        const line = String(next.value);
        if (!line.trim()) break;
        messages.push({ role: 'user', content: line });
        const ids = tok.encode(tok.applyChatTemplate(messages, { addGenerationPrompt: true }), { addSpecialTokens: false });
        const it = generateTokens(model, ids, opts);
        let r = await it.next();
        while (!r.done) {
          process.stdout.write(r.value.text);
          r = await it.next();
        }
        messages.push({ role: 'assistant', content: r.value.text });
        process.stdout.write(`\n[${r.value.decodeTokensPerSecond.toFixed(1)} tok/s]\n`);
      }
    } finally {
      rl.close();
      model.destroy();
      dev.destroy();
    }
  });

  program
    .command('logits')
    .description('run the model on token ids and print the last position\'s logits and the argmax at every position')
    .option('--model <path>', 'HF model folder or .gguf file', DEFAULT_MODEL)
    .requiredOption('--ids <ids>', 'comma-separated token ids')
    .option('--quant <mode>', `weights on the GPU: ${QUANT_MODES.join(' | ')}`)
    .option('--token-by-token', 'run the ids one at a time over the KV cache, as decoding does (default: one prefill of them all)')
    .option('--json', 'print { "logits": [...], "argmax": [...] }')
    .action(async (f: { model: string; ids: string; quant?: string; tokenByToken?: boolean; json?: boolean }) => {
      const { computeLogits } = await import('../runtime/logits.ts');
      const src = await openModel(f.model);
      const ids = idsFor(src, f.ids);
      const { dev, model } = await loadWithProgress(src, quantOpt(f.quant), Boolean(f.json));
      try {
        const r = await computeLogits(model, ids, { tokenByToken: Boolean(f.tokenByToken) });
        const tok = model.tokenizer;
        if (f.json) process.stdout.write(JSON.stringify({ logits: Array.from(r.last), argmax: r.argmax }) + '\n');
        else {
          const top = Array.from(r.last.entries()).sort((a, b) => b[1] - a[1]).slice(0, 10);
          console.log(`argmax at each position: ${r.argmax.join(', ')}`);
          console.log(`top 10 at the last position: ${top.map(([i, v]) => `${i}:${v.toFixed(4)}${tok ? ` ${JSON.stringify(tok.decode([i]))}` : ''}`).join('  ')}`);
          if (!tok) console.log(`(${textOmitted(model.tokenizerFile)})`);
        }
      } finally {
        model.destroy();
        dev.destroy();
      }
    });
}
