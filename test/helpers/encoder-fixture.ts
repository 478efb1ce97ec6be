/** Tiny random encoder checkpoints written to a temp folder (test/encoder.test.ts, test/server-embeddings.test.ts). */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serializeSafetensors, type TensorToWrite } from '../../src/formats/safetensors.ts';
import { Rng } from '../../src/selftest/rng.ts';

export const TINY = { hidden_size: 32, num_hidden_layers: 2, num_attention_heads: 4, intermediate_size: 64, vocab_size: 50, max_position_embeddings: 40, type_vocab_size: 2, layer_norm_eps: 1e-12, hidden_act: 'gelu' };

/** A random checkpoint folder for `config`; returns its path and the f32 tensors by name. */
export function writeModel(config: Record<string, unknown>, seed: string, extra: Record<string, string> = {}): { dir: string; tensors: Map<string, Float32Array> } {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-encoder-'));
  const r = new Rng(seed);
  const prefix = config.architectures && String((config.architectures as string[])[0]).startsWith('Bert') && String((config.architectures as string[])[0]).includes('For') ? 'bert.' : String((config.architectures as string[])[0]).startsWith('XLMRobertaFor') ? 'roberta.' : '';
  const H = config.hidden_size as number;
  const I = config.intermediate_size as number;
  const shapes: [string, number[]][] = [
    [`${prefix}embeddings.word_embeddings.weight`, [config.vocab_size as number, H]],
    [`${prefix}embeddings.position_embeddings.weight`, [config.max_position_embeddings as number, H]],
    [`${prefix}embeddings.token_type_embeddings.weight`, [config.type_vocab_size as number, H]],
    [`${prefix}embeddings.LayerNorm.weight`, [H]],
    [`${prefix}embeddings.LayerNorm.bias`, [H]],
  ];
  for (let l = 0; l < (config.num_hidden_layers as number); l++) {
    const p = `${prefix}encoder.layer.${l}.`;
    for (const d of ['attention.self.query', 'attention.self.key', 'attention.self.value', 'attention.output.dense']) shapes.push([`${p}${d}.weight`, [H, H]], [`${p}${d}.bias`, [H]]);
    for (const d of ['attention.output.LayerNorm', 'output.LayerNorm']) shapes.push([`${p}${d}.weight`, [H]], [`${p}${d}.bias`, [H]]);
    shapes.push([`${p}intermediate.dense.weight`, [I, H]], [`${p}intermediate.dense.bias`, [I]], [`${p}output.dense.weight`, [H, I]], [`${p}output.dense.bias`, [H]]);
  }
  const arch = String((config.architectures as string[])[0]);
  const labels = (config.num_labels as number) ?? 2;
  if (arch === 'BertForSequenceClassification') shapes.push(['bert.pooler.dense.weight', [H, H]], ['bert.pooler.dense.bias', [H]], ['classifier.weight', [labels, H]], ['classifier.bias', [labels]]);
  if (arch === 'XLMRobertaForSequenceClassification') shapes.push(['classifier.dense.weight', [H, H]], ['classifier.dense.bias', [H]], ['classifier.out_proj.weight', [labels, H]], ['classifier.out_proj.bias', [labels]]);
  const tensors = new Map<string, Float32Array>();
  const out: TensorToWrite[] = [];
  for (const [name, shape] of shapes) {
    const n = shape.reduce((a, b) => a * b, 1);
    const isLnW = name.endsWith('LayerNorm.weight');
    const data = isLnW ? r.floats(n, 0.8, 1.2) : r.floats(n, -0.3, 0.3);
    tensors.set(name, data);
    out.push({ name, dtype: 'F32', shape, data: new Uint8Array(data.buffer) });
  }
  writeFileSync(join(dir, 'model.safetensors'), serializeSafetensors(out));
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  for (const [f, text] of Object.entries(extra)) {
    mkdirSync(join(dir, f, '..'), { recursive: true });
    writeFileSync(join(dir, f), text);
  }
  return { dir, tensors };
}


/** Words of the tiny WordPiece vocabulary (ids 5 ..), after [PAD] [UNK] [CLS] [SEP] [MASK]. */
export const WORDS = 'in the beginning was word and with god light shineth darkness comprehended it not where a of to is be there let said made all things by him that which life men were this came for witness bear so'.split(' ');

/** A BERT-style tokenizer.json (WordPiece over WORDS, lowercasing, [CLS] A [SEP] / [CLS] A [SEP] B [SEP] with types). */
export function bertTokenizerJson(): string {
  const vocab: Record<string, number> = {};
  ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', ...WORDS].forEach((w, i) => (vocab[w] = i));
  const special = (content: string) => ({ id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  return JSON.stringify({
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'].map(special),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: '[SEP]', type_id: 1 } }],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [2], tokens: ['[CLS]'] }, '[SEP]': { id: '[SEP]', ids: [3], tokens: ['[SEP]'] } },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  });
}
