/**
 * A model source: an HF folder (config.json + safetensors + tokenizer.json) or a GGUF file, seen the same way:
 * a normalized DecoderConfig, a tokenizer, and tensors by HF name (read as f32, or as raw ggml blocks).
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
  tokenizer: TextTokenizer;
  /** GGUF LLaMA q/k rows are permuted for adjacent-pair RoPE. */
  ropeInterleaved: boolean;
  /** Norm weights already include Gemma's +1 (GGUF). */
  normsHaveOne: boolean;
  has(name: string): boolean;
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
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    throw new ModelConfigError(file, '(file)', `not valid JSON: ${(e as Error).message}`);
  }
}

async function hfSource(dir: string): Promise<ModelSource> {
  const cfgFile = join(dir, 'config.json');
  if (!existsSync(cfgFile)) throw new ModelConfigError(dir, 'config.json', 'not found: a Hugging Face model folder needs config.json (or pass a .gguf file)');
  const config = decoderConfigFromHF(readJson(cfgFile), cfgFile);
  if (!existsSync(join(dir, 'tokenizer.json'))) throw new ModelConfigError(dir, 'tokenizer.json', 'not found: the model folder needs tokenizer.json');
  const tokenizer = await loadTokenizer(dir);
  const ck: Checkpoint = await openCheckpoint(dir);
  const weightsFile = ck.files.length === 1 ? ck.files[0]! : dir;
  return {
    kind: 'hf',
    path: dir,
    config,
    tokenizer,
    ropeInterleaved: false,
    normsHaveOne: false,
    weightsFile,
    has: (n) => ck.has(n),
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
  const config = decoderConfigFromHF(raw, `${file} (GGUF metadata)`);
  const byHf = new Map<string, string>();
  for (const t of g.tensors) {
    const hf = hfTensorName(t.name, arch);
    if (hf) byHf.set(hf, t.name);
  }
  if (!byHf.has('lm_head.weight')) config.tieWordEmbeddings = true;
  const tokenizer = tokenizerFromGguf(g.metadata as never, { origin: file });
  const gname = (n: string) => {
    const x = byHf.get(n);
    if (!x) throw new MissingTensorError(file, n, `is missing (GGUF has no tensor mapping to it)`);
    return x;
  };
  return {
    kind: 'gguf',
    path: file,
    config,
    tokenizer,
    ropeInterleaved,
    normsHaveOne,
    weightsFile: file,
    has: (n) => byHf.has(n),
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
