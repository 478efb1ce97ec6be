/**
 * A model source: an HF folder (config.json + safetensors, tokenizer.json when present) or a GGUF file, seen the
 * same way: a normalized DecoderConfig, a tokenizer (null when the source has none: token ids only, as transformers
 * loads such a model), and tensors by HF name (read as f32, or as raw ggml blocks).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { GgmlType, openCheckpoint, openGguf, type Checkpoint, type GgufFile } from '../formats/index.ts';
import { loadTokenizer, tokenizerFromGguf, type TextTokenizer } from '../tokenizer/index.ts';
import { decoderConfigFromHF, type DecoderConfig } from './config.ts';
import { ModelConfigError, MissingTensorError } from './errors.ts';
import { hfConfigFromGguf, hfTensorName } from './gguf-map.ts';

export interface SourceTensor {
  name: string;
  shape: number[];
  /** ggml type id when the source stores it block-quantized (GGUF Q4_K, Q8_0, ...). */
  ggmlType?: number;
}

export interface ModelSource {
  kind: 'hf' | 'gguf';
  path: string;
  config: DecoderConfig;
  /** Where the config came from and the field holding the layer count, for messages. */
  configFile: string;
  layerCountField: string;
  /** null when the source has no tokenizer (HF folder without tokenizer.json, GGUF without tokenizer.ggml.*). */
  tokenizer: TextTokenizer | null;
  /** The tokenizer's file (tokenizer.json, or the GGUF); when `tokenizer` is null, the file that is missing. */
  tokenizerFile: string;
  /** GGUF LLaMA q/k rows are permuted for adjacent-pair RoPE. */
  ropeInterleaved: boolean;
  /** Norm weights already include Gemma's +1 (GGUF). */
  normsHaveOne: boolean;
  has(name: string): boolean;
  /** Every tensor name the source holds (HF names). */
  names(): string[];
  info(name: string): SourceTensor;
  toFloat32(name: string): Promise<Float32Array>;
  /** Raw ggml blocks of a block-quantized tensor. */
  readRaw(name: string): Promise<Uint8Array>;
  /** Where the weights live, for messages. */
  weightsFile: string;
}

function readJson(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ModelConfigError(file, '(file)', `cannot read: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ModelConfigError(file, '(file)', `not valid JSON: ${(e as Error).message}`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new ModelConfigError(file, '(file)', 'must hold a JSON object');
  return json as Record<string, unknown>;
}

/** generation_config.json's eos_token_id (a number or a list), when the file exists. */
function generationEosIds(dir: string): number[] {
  const f = join(dir, 'generation_config.json');
  if (!existsSync(f)) return [];
  const v = readJson(f).eos_token_id;
  const list = Array.isArray(v) ? v : [v];
  return list.filter((x): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0);
}

async function hfSource(dir: string): Promise<ModelSource> {
  const cfgFile = join(dir, 'config.json');
  if (!existsSync(cfgFile)) throw new ModelConfigError(dir, 'config.json', 'not found: a Hugging Face model folder needs config.json (or pass a .gguf file)');
  const config = decoderConfigFromHF(readJson(cfgFile), cfgFile);
  const ck: Checkpoint = await openCheckpoint(dir);
  const weightsFile = ck.files.length === 1 ? ck.files[0]! : dir;
  const tokenizerFile = join(dir, 'tokenizer.json');
  const tokenizer = existsSync(tokenizerFile) ? await loadTokenizer(dir) : null;
  if (!tokenizer) config.eosTokenIds = [...new Set([...config.eosTokenIds, ...generationEosIds(dir)])];
  return {
    kind: 'hf',
    path: dir,
    config,
    configFile: cfgFile,
    layerCountField: 'num_hidden_layers',
    tokenizer,
    tokenizerFile,
    ropeInterleaved: false,
    normsHaveOne: false,
    weightsFile,
    has: (n) => ck.has(n),
    names: () => ck.tensors.map((t) => t.name),
    info: (n) => {
      if (!ck.has(n)) throw new MissingTensorError(weightsFile, n);
      const t = ck.info(n);
      return { name: n, shape: [...t.shape] };
    },
    toFloat32: (n) => ck.toFloat32(n),
    readRaw: async (n) => (await ck.read(n)).data,
  };
}

async function ggufSource(file: string): Promise<ModelSource> {
  const g: GgufFile = await openGguf(file);
  const arch = String(g.metadata['general.architecture'] ?? '');
  const { config: raw, ropeInterleaved, normsHaveOne } = hfConfigFromGguf(g.metadata as Record<string, unknown>, file);
  const configFile = `${file} (GGUF metadata)`;
  const config = decoderConfigFromHF(raw, configFile);
  const byHf = new Map<string, string>();
  for (const t of g.tensors) {
    const hf = hfTensorName(t.name, arch);
    if (hf) byHf.set(hf, t.name);
  }
  if (!byHf.has('lm_head.weight')) config.tieWordEmbeddings = true;
  const tokenizer = g.metadata['tokenizer.ggml.tokens'] === undefined ? null : tokenizerFromGguf(g.metadata as never, { origin: file });
  const gname = (n: string) => {
    const x = byHf.get(n);
    if (!x) throw new MissingTensorError(file, n, `is missing (GGUF has no tensor mapping to it)`);
    return x;
  };
  return {
    kind: 'gguf',
    path: file,
    config,
    configFile,
    layerCountField: `${arch}.block_count`,
    tokenizer,
    tokenizerFile: file,
    ropeInterleaved,
    normsHaveOne,
    weightsFile: file,
    has: (n) => byHf.has(n),
    names: () => [...byHf.keys()],
    info: (n) => {
      const t = g.info(gname(n));
      const quant = t.type !== GgmlType.F32 && t.type !== GgmlType.F16 && t.type !== GgmlType.BF16;
      return { name: n, shape: [...t.shape], ...(quant ? { ggmlType: t.type } : {}) };
    },
    toFloat32: (n) => g.toFloat32(gname(n)),
    readRaw: (n) => g.readRaw(gname(n)),
  };
}

/** Open a model: an HF folder or a .gguf file. */
export async function openModelSource(path: string): Promise<ModelSource> {
  let st;
  try {
    st = statSync(path);
  } catch {
    throw new ModelConfigError(path, '(path)', 'does not exist: pass a Hugging Face model folder or a .gguf file');
  }
  if (st.isDirectory()) return hfSource(path);
  if (path.endsWith('.gguf')) return ggufSource(path);
  throw new ModelConfigError(path, '(path)', 'is neither a model folder (with config.json) nor a .gguf file');
}
