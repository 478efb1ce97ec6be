/**
 * Token ids are checked where they enter (issue 8, item 2): decimal integers only on the command line, and every id
 * in 0..vocab_size-1 for the CLI and the library (computeLogits, generateTokens) before any GPU work.
 */
import { describe, expect, it } from 'vitest';
import { TokenIdError } from '../src/models/errors.ts';
import type { LoadedModel } from '../src/models/load.ts';
import { checkTokenIds, parseTokenIds } from '../src/models/token-ids.ts';
import { generate } from '../src/runtime/generate.ts';
import { computeLogits } from '../src/runtime/logits.ts';
import { tessera } from './helpers/cli.ts';

describe('parseTokenIds', () => {
  it('accepts decimal integers with spaces around commas', () => {
    expect(parseTokenIds('1, 2,3 ,0', '--ids', 2048)).toEqual([1, 2, 3, 0]);
    expect(parseTokenIds('2047', '--ids', 2048)).toEqual([2047]);
  });

  it.each(['0x10', '1e3', '-1', '1.5', '+1', ' ', '1,,2', '1,', 'abc', '１'])('refuses %j naming the value and the range', (text) => {
    expect(() => parseTokenIds(text, '--ids', 2048)).toThrow(TokenIdError);
    expect(() => parseTokenIds(text, '--ids', 2048)).toThrow(/^--ids: ".*" (\(in ".*"\) )?is not a token id: write ids as decimal integers, valid ids are 0\.\.2047 \(vocab_size 2048\)/);
  });

  it.each(['2048', '4294967297', '99999999999999999999999'])('refuses out-of-range %s naming it and the range', (text) => {
    expect(() => parseTokenIds(`1,${text}`, '--ids', 2048)).toThrow(`--ids: token id ${text} is out of range: valid ids are 0..2047 (vocab_size 2048)`);
  });
});

describe('checkTokenIds (the library entry)', () => {
  it.each([
    [[2048], 'token id 2048 at position 0'],
    [[1, -1], 'token id -1 at position 1'],
    [[1.5], 'token id 1.5 at position 0'],
    [[NaN], 'token id NaN at position 0'],
    [['3'], 'token id "3" at position 0'],
    [[], 'no token ids'],
  ])('%j is refused', (ids, msg) => {
    expect(() => checkTokenIds(ids, 2048, 'computeLogits: ids')).toThrow(`computeLogits: ids: ${msg}`);
  });

  it('computeLogits and generate check ids before touching the model', async () => {
    // No decoder, no device: the check must come first.
    const model = { config: { vocabSize: 100 } } as unknown as LoadedModel;
    await expect(computeLogits(model, [1, 100])).rejects.toThrow('computeLogits: ids: token id 100 at position 1 is not a valid id: valid ids are 0..99 (vocab_size 100)');
    await expect(generate(model, [2 ** 32 + 1])).rejects.toThrow('generateTokens: promptIds: token id 4294967297 at position 0 is not a valid id: valid ids are 0..99');
    await expect(generate(model, [])).rejects.toThrow(TokenIdError);
  });
});

describe('tessera --ids', () => {
  it.each([
    ['logits', '1,2048', '--ids: token id 2048 is out of range: valid ids are 0..2047 (vocab_size 2048)'],
    ['logits', '1,4294967297', '--ids: token id 4294967297 is out of range: valid ids are 0..2047 (vocab_size 2048)'],
    ['generate', '0x10', '--ids: "0x10" is not a token id: write ids as decimal integers, valid ids are 0..2047 (vocab_size 2048), separated by commas'],
    ['generate', '1,-1', '--ids: "-1" (in "1,-1") is not a token id'],
  ])('%s --ids %s fails with exit 1 before the model is loaded', async (cmd, ids, msg) => {
    const r = await tessera(cmd, '--model', 'test/fixtures/hf/llama', `--ids=${ids}`, ...(cmd === 'generate' ? ['--max-tokens', '1'] : []));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`error: ${msg}`);
    expect(r.stderr).not.toContain('loading');
  });
});
