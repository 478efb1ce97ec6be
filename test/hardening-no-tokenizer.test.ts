/**
 * A Hugging Face folder without tokenizer.json (config.json + model.safetensors) runs on token ids, as transformers
 * loads such a model (issue 8, item 7); text is omitted and the output says why; text input fails naming the missing
 * file. And `tessera chat` ends cleanly at end of input (item 3).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { MissingTokenizerError } from '../src/models/errors.ts';
import { loadModel, requireTokenizer } from '../src/models/load.ts';
import { generate } from '../src/runtime/generate.ts';
import { computeLogits } from '../src/runtime/logits.ts';
import { tessera } from './helpers/cli.ts';
import { testDevice } from './helpers/device.ts';

const FIXTURE = 'test/fixtures/hf/llama';
const golden = JSON.parse(readFileSync(`${FIXTURE}/golden.json`, 'utf8')) as { input_ids: number[]; argmax: number[]; greedy: { prompt_ids: number[]; new_ids: number[] } };

/** config.json + model.safetensors only (optionally with config edits). */
function idsOnlyFolder(edit?: (cfg: Record<string, unknown>) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-no-tokenizer-'));
  const cfg = JSON.parse(readFileSync(`${FIXTURE}/config.json`, 'utf8'));
  edit?.(cfg);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(cfg));
  copyFileSync(`${FIXTURE}/model.safetensors`, join(dir, 'model.safetensors'));
  return dir;
}

describe('tessera on a folder without tokenizer.json', () => {
  const dir = idsOnlyFolder();
  const missing = join(dir, 'tokenizer.json');

  it('logits --ids runs and matches the model with a tokenizer', async () => {
    const r = await tessera('logits', '--model', dir, '--ids', golden.input_ids.join(','), '--quant', 'f32', '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).argmax).toEqual(golden.argmax);
    const h = await tessera('logits', '--model', dir, '--ids', '1,2,3');
    expect(h.code).toBe(0);
    expect(h.stdout).toContain(`(text omitted: ${missing} does not exist, so ids cannot be turned into text (ids only))`);
  });

  it('generate --ids --json carries ids, omits text and says why', async () => {
    const r = await tessera('generate', '--model', dir, '--ids', golden.greedy.prompt_ids.join(','), '--max-tokens', '4', '--temperature', '0', '--quant', 'f32', '--json');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.ids).toEqual(golden.greedy.new_ids.slice(0, 4));
    expect(j).not.toHaveProperty('text');
    expect(j.textOmitted).toBe(`text omitted: ${missing} does not exist, so ids cannot be turned into text (ids only)`);
  });

  it('generate --ids (human output) prints the ids and a note', async () => {
    const r = await tessera('generate', '--model', dir, '--ids', golden.greedy.prompt_ids.join(','), '--max-tokens', '3', '--temperature', '0', '--quant', 'f32');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(golden.greedy.new_ids.slice(0, 3).join(','));
    expect(r.stderr).toContain(`note: text omitted: ${missing} does not exist`);
  });

  it.each([
    [['generate', '--prompt', 'hi'], '--prompt'],
    [['generate', '--prompt', 'hi', '--chat'], '--chat'],
    [['generate', '--ids', '1,2', '--stop', 'x'], '--stop'],
    [['chat'], 'tessera chat'],
  ])('%j fails naming the missing file', async (args, what) => {
    const r = await tessera(...args, '--model', dir);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      `error: ${missing} does not exist: ${what} needs a tokenizer to turn text into token ids; pass token ids instead (--ids 1,2,3), or add tokenizer.json to the model folder`,
    );
  });
});

describe('the library loads a model without a tokenizer', () => {
  let dev: TesseraDevice;
  beforeAll(async () => {
    dev = await testDevice();
  });

  it('tokenizer is null; logits and generation work on ids; EOS comes from config.json', async () => {
    const model = await loadModel(dev, idsOnlyFolder(), { quant: 'f32', maxPositions: 64 });
    let first: number;
    try {
      expect(model.tokenizer).toBeNull();
      expect(() => requireTokenizer(model, 'encode')).toThrow(MissingTokenizerError);
      expect((await computeLogits(model, golden.input_ids)).argmax).toEqual(golden.argmax);
      const r = await generate(model, golden.greedy.prompt_ids, { maxTokens: 3, temperature: 0 });
      expect(r.ids).toEqual(golden.greedy.new_ids.slice(0, 3));
      expect(r.text).toBe('');
      first = r.ids[0]!;
    } finally {
      model.destroy();
    }
    // Make the first greedy token the EOS of config.json: generation stops there.
    const eosModel = await loadModel(dev, idsOnlyFolder((c) => (c.eos_token_id = first)), { quant: 'f32', maxPositions: 64 });
    try {
      const r = await generate(eosModel, golden.greedy.prompt_ids, { maxTokens: 8, temperature: 0 });
      expect(r.finishReason).toBe('eos');
      expect(r.ids).toEqual([first]);
    } finally {
      eosModel.destroy();
    }
  });
});

/** Run `tessera chat` with stdin from /dev/null ('ignore') or from the given text. */
function chat(input: string | null, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['bin/tessera.mjs', 'chat', ...args], { stdio: [input === null ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout!.on('data', (d) => (stdout += d));
    p.stderr!.on('data', (d) => (stderr += d));
    if (input !== null) p.stdin!.end(input);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('tessera chat at end of input', () => {
  it('< /dev/null exits 0', async () => {
    const r = await chat(null, '--model', FIXTURE);
    // (Mesa's Vulkan drivers, where installed, print "error: XDG_RUNTIME_DIR is invalid ..." when the loader probes
    // them: the machine's, not tessera's)
    expect(r.stderr.replace(/^error: XDG_RUNTIME_DIR .*$/gm, '')).not.toMatch(/error/i);
    expect(r.code).toBe(0);
  });

  it('piped lines are all answered, then it exits 0 at end of input', async () => {
    const r = await chat('hello\nagain\n', '--model', FIXTURE, '--max-tokens', '2', '--temperature', '0');
    expect(r.code).toBe(0);
    expect(r.stdout.match(/tok\/s\]/g)).toHaveLength(2);
  });
});
