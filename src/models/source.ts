/**
 * A model source: an HF folder (config.json + safetensors, tokenizer.json when present) or a GGUF file, seen the
 * same way: a normalized DecoderConfig, a tokenizer (null when the source has none: token ids only, as transformers
 * loads such a model), and tensors by HF name (read as f32, or as raw ggml blocks). The files come through the
 * ModelFiles interface (src/formats/files.ts: Node paths, and whatever else implements it), or in Node from a path.
 */
import { getHost } from '../host.ts';
import { openCheckpoint, type Checkpoint } from '../formats/checkpoint.ts';
import { readText, type ModelFile, type ModelFiles, type ModelFolder } from '../formats/files.ts';
import { openGguf, type GgufFile } from '../formats/gguf.ts';
import { GgmlType } from '../formats/quant/ggml-types.ts';
import { loadTokenizer, type TextTokenizer } from '../tokenizer/tokenizer.ts';
import { tokenizerFromGguf } from '../tokenizer/gguf-vocab.ts';
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

async function readJson(f: ModelFile): Promise<Record<string, unknown>> {
  const file = f.path;
  let text: string;
  try {
    text = await readText(f);
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
async function generationEosIds(folder: ModelFolder): Promise<number[]> {
  const f = await folder.open('generation_config.json');
  if (!f) return [];
  const v = (await readJson(f)).eos_token_id;
  const list = Array.isArray(v) ? v : [v];
  return list.filter((x): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0);
}

async function hfSource(folder: ModelFolder): Promise<ModelSource> {
  const dir = folder.path;
  const cfgFile = folder.pathOf('config.json');
  const cfg = await folder.open('config.json');
  if (!cfg) throw new ModelConfigError(dir, 'config.json', 'not found: a Hugging Face model folder needs config.json (or pass a .gguf file)');
  const config = decoderConfigFromHF(await readJson(cfg), cfgFile);
  const ck: Checkpoint = await openCheckpoint(folder);
  const weightsFile = ck.files.length === 1 ? ck.files[0]! : dir;
  const tokenizerFile = folder.pathOf('tokenizer.json');
  const tokenizer = (await folder.open('tokenizer.json')) ? await loadTokenizer(folder) : null;
  if (!tokenizer) config.eosTokenIds = [...new Set([...config.eosTokenIds, ...(await generationEosIds(folder))])];
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

async function ggufSource(f: ModelFile): Promise<ModelSource> {
  const file = f.path;
  const g: GgufFile = await openGguf(f);
  const arch = String(g.metadata['general.architecture'] ?? '');
  const { config: raw, ropeInterleaved, normsHaveOne } = hfConfigFromGguf(g.metadata as Record<string, unknown>, file, g.tensors.map((t) => t.name));
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

/** Open a model: an HF folder or a .gguf file, as ModelFiles or (Node) a path. */
export async function openModelSource(source: string | ModelFiles): Promise<ModelSource> {
  let at: ModelFiles | undefined;
  if (typeof source === 'string') {
    at = await (await getHost(`opening the model ${source}`)).openPath(source);
    if (!at) throw new ModelConfigError(source, '(path)', 'does not exist: pass a Hugging Face model folder or a .gguf file');
  } else {
    at = source;
  }
  if (at.kind === 'folder') return hfSource(at);
  if (at.path.endsWith('.gguf')) return ggufSource(at.file);
  throw new ModelConfigError(at.path, '(path)', 'is neither a model folder (with config.json) nor a .gguf file');
}
