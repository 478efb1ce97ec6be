/** Bad model inputs fail before anything is half-loaded, with errors naming the file and the field or tensor. */
import { describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tessera } from './helpers/cli.ts';


function copyFixture(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `tessera-${name}-`));
  cpSync(`test/fixtures/hf/${name}`, dir, { recursive: true });
  return dir;
}

describe('bad model inputs (tessera logits)', () => {
  it('a truncated safetensors file names the file and the first tensor past the end', async () => {
    const dir = copyFixture('llama');
    const f = join(dir, 'model.safetensors');
    truncateSync(f, Math.floor(statSync(f).size * 0.6));
    const r = await tessera('logits', '--model', dir, '--ids', '1,2,3', '--json');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(f);
    expect(r.stderr).toMatch(/tensor "model\.[a-z_.0-9]+"/);
    expect(r.stderr).toMatch(/truncat|past the end/i);
  });

  it('a config.json missing a required field names the file and the field', async () => {
    const dir = copyFixture('qwen3');
    const cfgFile = join(dir, 'config.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
    delete cfg.num_hidden_layers;
    writeFileSync(cfgFile, JSON.stringify(cfg));
    const r = await tessera('logits', '--model', dir, '--ids', '1,2,3');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${cfgFile}: num_hidden_layers: required field is missing`);
  });

  it('an unknown architecture is refused, naming it', async () => {
    const dir = copyFixture('llama');
    const cfgFile = join(dir, 'config.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
    cfg.architectures = ['MambaForCausalLM'];
    writeFileSync(cfgFile, JSON.stringify(cfg));
    const r = await tessera('logits', '--model', dir, '--ids', '1');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/architecture "MambaForCausalLM" is not supported \(supported: LlamaForCausalLM, .*Gemma3ForCausalLM.*\)/);
  });

  it('a tensor whose shape disagrees with config.json is named with both shapes', async () => {
    const dir = copyFixture('llama');
    const cfgFile = join(dir, 'config.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
    cfg.intermediate_size = 96;
    writeFileSync(cfgFile, JSON.stringify(cfg));
    const r = await tessera('logits', '--model', dir, '--ids', '1');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/model\.layers\.0\.mlp\.gate_proj\.weight: has shape \[128, 64\] but config\.json implies \[96, 64\]/);
  });

  it('a path that is not a model says what it expects', async () => {
    const r = await tessera('logits', '--model', '/nonexistent/model', '--ids', '1');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/does not exist: pass a Hugging Face model folder or a \.gguf file/);
  });
});

describe('tessera generate and logits on a fixture (as a new user would)', () => {
  it('generate --ids --temperature 0 --json prints ids, text and speeds', async () => {
    const g = JSON.parse(readFileSync('test/fixtures/hf/qwen3/golden.json', 'utf8'));
    const r = await tessera('generate', '--model', 'test/fixtures/hf/qwen3', '--ids', g.greedy.prompt_ids.join(','), '--max-tokens', '8', '--temperature', '0', '--json');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(Object.keys(j)).toEqual(expect.arrayContaining(['ids', 'text', 'prefillTokensPerSecond', 'decodeTokensPerSecond']));
    expect(j.ids).toEqual(g.greedy.new_ids.slice(0, 8));
    expect(j.decodeTokensPerSecond).toBeGreaterThan(0);
  });

  it('logits --json prints the last logits and the argmax at every position', async () => {
    const g = JSON.parse(readFileSync('test/fixtures/hf/gemma3/golden.json', 'utf8'));
    const r = await tessera('logits', '--model', 'test/fixtures/hf/gemma3', '--ids', g.input_ids.join(','), '--quant', 'f32', '--json');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout) as { logits: number[]; argmax: number[] };
    expect(j.argmax).toEqual(g.argmax);
    const last = g.logits[g.logits.length - 1] as number[];
    const maxAbs = Math.max(...last.map(Math.abs));
    expect(Math.max(...j.logits.map((v, i) => Math.abs(v - last[i]!))) / maxAbs).toBeLessThan(1e-3);
  });
});
