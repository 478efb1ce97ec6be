/**
 * Encoders for embeddings and reranking: BERT and (XLM-)RoBERTa (absolute positions, token types, post-LayerNorm,
 * GELU, bidirectional attention), with the sequence-classification heads cross-encoders use. The forward pass is a
 * step of op calls (layernorm, linear, bias_act, attention with causal 0, residual) compiled once per (batch, length)
 * bucket by the program layer: up to 64 texts run together, each padded to the bucket of the longest (the next power of
 * two, at least 8 tokens), its padded rows masked out of its attention by a dynamic kv_len = its length (rows never mix
 * elsewhere) and ignored by pooling.
 */
import type { ModelFiles } from '../formats/files.ts';
import { readText } from '../formats/files.ts';
import { openCheckpoint, type Checkpoint } from '../formats/checkpoint.ts';
import { f32ToF16Bytes } from '../formats/index.ts';
import { readFloat32, storageBuffer, uploadBuffer, writeBuffer } from '../gpu/buffers.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import { Recorder, type KernelTime } from '../gpu/recorder.ts';
import { getHost } from '../host.ts';
import { OpRunner, type Tensor } from '../ops/runner.ts';
import { Program } from '../program/program.ts';
import { dyn, StepBuilder, type StepTensor } from '../program/step.ts';
import type { Activation } from '../reference/activations.ts';
import { ModelConfigError, UnsupportedArchitectureError } from './errors.ts';

export type EncoderFamily = 'bert' | 'roberta';
export type EncoderHead = 'none' | 'bert-classifier' | 'roberta-classifier';

export interface EncoderConfig {
  architecture: string;
  family: EncoderFamily;
  hidden: number;
  layers: number;
  heads: number;
  intermediate: number;
  activation: Activation;
  eps: number;
  vocabSize: number;
  maxPositions: number;
  typeVocabSize: number;
  /** Position id of the first token: 0 (BERT) or pad_token_id + 1 (RoBERTa / XLM-R). */
  positionOffset: number;
  padTokenId: number;
  head: EncoderHead;
  numLabels: number;
  /** Tensor name prefix of the encoder body in the checkpoint ('', 'bert.', 'roberta.'). */
  prefix: string;
}

const ARCHITECTURES: Record<string, { family: EncoderFamily; head: EncoderHead }> = {
  BertModel: { family: 'bert', head: 'none' },
  BertForSequenceClassification: { family: 'bert', head: 'bert-classifier' },
  RobertaModel: { family: 'roberta', head: 'none' },
  XLMRobertaModel: { family: 'roberta', head: 'none' },
  RobertaForSequenceClassification: { family: 'roberta', head: 'roberta-classifier' },
  XLMRobertaForSequenceClassification: { family: 'roberta', head: 'roberta-classifier' },
};

const ACTIVATIONS: Record<string, Activation> = { gelu: 'gelu_erf', gelu_new: 'gelu_tanh', gelu_pytorch_tanh: 'gelu_tanh', relu: 'relu' };

/** Is this config.json an encoder Tessera runs (by `architectures`)? */
export function isEncoderConfig(json: Record<string, unknown>): boolean {
  const a = json.architectures;
  return Array.isArray(a) && typeof a[0] === 'string' && a[0] in ARCHITECTURES;
}

export function encoderConfigFromHF(json: Record<string, unknown>, file: string, has: (name: string) => boolean): EncoderConfig {
  const archs = json.architectures;
  const architecture = Array.isArray(archs) && typeof archs[0] === 'string' ? archs[0] : undefined;
  if (!architecture) throw new ModelConfigError(file, 'architectures', 'missing: a list naming the model class, e.g. ["BertModel"]');
  const arch = ARCHITECTURES[architecture];
  if (!arch) throw new UnsupportedArchitectureError(file, architecture, Object.keys(ARCHITECTURES));
  const int = (name: string, def?: number): number => {
    const v = json[name] ?? def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new ModelConfigError(file, name, v === undefined ? 'missing' : `must be a non-negative integer, got ${JSON.stringify(v)}`);
    return v;
  };
  const hidden = int('hidden_size');
  const heads = int('num_attention_heads');
  if (heads === 0 || hidden % heads !== 0) throw new ModelConfigError(file, 'num_attention_heads', `${heads} does not divide hidden_size ${hidden}`);
  const act = String(json.hidden_act ?? 'gelu');
  const activation = ACTIVATIONS[act];
  if (!activation) throw new ModelConfigError(file, 'hidden_act', `"${act}" is not supported (supported: ${Object.keys(ACTIVATIONS).join(', ')})`);
  const pe = json.position_embedding_type ?? 'absolute';
  if (pe !== 'absolute') throw new ModelConfigError(file, 'position_embedding_type', `"${String(pe)}" is not supported (absolute only)`);
  const eps = json.layer_norm_eps ?? 1e-12;
  if (typeof eps !== 'number' || !(eps > 0)) throw new ModelConfigError(file, 'layer_norm_eps', `must be a positive number, got ${JSON.stringify(eps)}`);
  const padTokenId = int('pad_token_id', arch.family === 'roberta' ? 1 : 0);
  const body = ['', 'bert.', 'roberta.'].find((p) => has(`${p}embeddings.word_embeddings.weight`));
  if (body === undefined) throw new ModelConfigError(file, '(weights)', 'no embeddings.word_embeddings.weight (with or without a bert. / roberta. prefix) in the checkpoint');
  let numLabels = 0;
  if (arch.head !== 'none') {
    const id2label = json.id2label;
    numLabels = typeof json.num_labels === 'number' ? json.num_labels : id2label && typeof id2label === 'object' ? Object.keys(id2label).length : 2;
  }
  return {
    architecture,
    family: arch.family,
    hidden,
    layers: int('num_hidden_layers'),
    heads,
    intermediate: int('intermediate_size'),
    activation,
    eps,
    vocabSize: int('vocab_size'),
    maxPositions: int('max_position_embeddings'),
    typeVocabSize: int('type_vocab_size', 2),
    positionOffset: arch.family === 'roberta' ? padTokenId + 1 : 0,
    padTokenId,
    head: arch.head,
    numLabels,
    prefix: body,
  };
}

/** The tensor names the body needs, by role. */
function layerNames(cfg: EncoderConfig, i: number) {
  const l = `${cfg.prefix}encoder.layer.${i}.`;
  return {
    q: `${l}attention.self.query`,
    k: `${l}attention.self.key`,
    v: `${l}attention.self.value`,
    o: `${l}attention.output.dense`,
    ln1: `${l}attention.output.LayerNorm`,
    up: `${l}intermediate.dense`,
    down: `${l}output.dense`,
    ln2: `${l}output.LayerNorm`,
  };
}

function headNames(cfg: EncoderConfig): string[] {
  if (cfg.head === 'bert-classifier') return [`${cfg.prefix}pooler.dense`, 'classifier'];
  if (cfg.head === 'roberta-classifier') return ['classifier.dense', 'classifier.out_proj'];
  return [];
}

interface Dense {
  w: Tensor;
  b: Tensor;
}

interface HostDense {
  w: Float32Array;
  b: Float32Array;
  n: number;
  k: number;
}

export interface EncoderOutput {
  /** Hidden states of the last layer, [tokens, hidden]. */
  hidden: Float32Array;
  tokens: number;
}

export interface EncoderOptions {
  /** Dense-layer weight matrices on the GPU: f32 (default), f16 (needs shader-f16) or auto (f16 where the device has shader-f16). */
  weights?: 'f32' | 'f16' | 'auto';
}

/** Every tensor an encoder of this config reads, by HF name, with its shape. */
export function encoderTensorShapes(cfg: EncoderConfig): Map<string, number[]> {
  const H = cfg.hidden;
  const want = new Map<string, number[]>();
  const e = `${cfg.prefix}embeddings.`;
  want.set(`${e}word_embeddings.weight`, [cfg.vocabSize, H]);
  want.set(`${e}position_embeddings.weight`, [cfg.maxPositions, H]);
  want.set(`${e}token_type_embeddings.weight`, [cfg.typeVocabSize, H]);
  want.set(`${e}LayerNorm.weight`, [H]).set(`${e}LayerNorm.bias`, [H]);
  for (let i = 0; i < cfg.layers; i++) {
    const n = layerNames(cfg, i);
    for (const d of [n.q, n.k, n.v, n.o]) want.set(`${d}.weight`, [H, H]).set(`${d}.bias`, [H]);
    for (const d of [n.ln1, n.ln2]) want.set(`${d}.weight`, [H]).set(`${d}.bias`, [H]);
    want.set(`${n.up}.weight`, [cfg.intermediate, H]).set(`${n.up}.bias`, [cfg.intermediate]);
    want.set(`${n.down}.weight`, [H, cfg.intermediate]).set(`${n.down}.bias`, [H]);
  }
  const [h1, h2] = headNames(cfg);
  if (h1) want.set(`${h1}.weight`, [H, H]).set(`${h1}.bias`, [H]);
  if (h2) want.set(`${h2}.weight`, [cfg.numLabels, H]).set(`${h2}.bias`, [cfg.numLabels]);
  return want;
}

/** An encoder resident on the GPU (f32 activations; f32 or f16 dense weights). */
export class Encoder {
  readonly ops: OpRunner;
  private readonly emb: { word: Tensor; pos: Tensor; type: Tensor; ln: Dense };
  private readonly layers: { q: Dense; k: Dense; v: Dense; o: Dense; ln1: Dense; up: Dense; down: Dense; ln2: Dense }[];
  /** Classification head, on the host (two small mat-vecs per text). */
  readonly headWeights: HostDense[];
  private readonly owned: GPUBuffer[] = [];
  private readonly buckets = new Map<string, { program: Program; ids: GPUBuffer; pos: GPUBuffer; types: GPUBuffer; out: GPUBuffer }>();

  private constructor(
    readonly dev: TesseraDevice,
    readonly cfg: EncoderConfig,
    tensors: ReadonlyMap<string, Float32Array>,
    headWeights: HostDense[],
    /** Storage of the dense layers' weight matrices (activations stay f32). */
    readonly weightDtype: 'float32' | 'float16',
  ) {
    this.ops = new OpRunner(dev);
    const up = (name: string, shape: number[], dtype: 'float32' | 'float16' = 'float32'): Tensor => {
      const data = tensors.get(name);
      if (!data) throw new ModelConfigError('(checkpoint)', name, 'missing tensor');
      const buffer = uploadBuffer(dev.device, dtype === 'float16' ? f32ToF16Bytes(data) : data, name);
      this.owned.push(buffer);
      return { buffer, dtype, shape };
    };
    const H = cfg.hidden;
    const dense = (name: string, n: number, k: number): Dense => ({ w: up(`${name}.weight`, [n, k], weightDtype), b: up(`${name}.bias`, [n]) });
    const ln = (name: string): Dense => ({ w: up(`${name}.weight`, [H]), b: up(`${name}.bias`, [H]) });
    const e = `${cfg.prefix}embeddings.`;
    this.emb = {
      word: up(`${e}word_embeddings.weight`, [cfg.vocabSize, H]),
      pos: up(`${e}position_embeddings.weight`, [cfg.maxPositions, H]),
      type: up(`${e}token_type_embeddings.weight`, [cfg.typeVocabSize, H]),
      ln: ln(`${e}LayerNorm`),
    };
    this.layers = Array.from({ length: cfg.layers }, (_, i) => {
      const n = layerNames(cfg, i);
      return {
        q: dense(n.q, H, H),
        k: dense(n.k, H, H),
        v: dense(n.v, H, H),
        o: dense(n.o, H, H),
        ln1: ln(n.ln1),
        up: dense(n.up, cfg.intermediate, H),
        down: dense(n.down, H, cfg.intermediate),
        ln2: ln(n.ln2),
      };
    });
    this.headWeights = headWeights;
  }

  /** Load from a checkpoint already opened (every tensor read as f32 and checked against the config's shapes). */
  static async fromCheckpoint(dev: TesseraDevice, ck: Checkpoint, cfg: EncoderConfig, opts: EncoderOptions = {}): Promise<Encoder> {
    const tensors = new Map<string, Float32Array>();
    for (const [name, shape] of encoderTensorShapes(cfg)) {
      if (!ck.has(name)) throw new ModelConfigError(ck.path, name, `missing tensor (${cfg.architecture} needs it, shape [${shape.join(', ')}])`);
      const info = ck.info(name);
      if (info.shape.join(',') !== shape.join(',')) throw new ModelConfigError(ck.path, name, `has shape [${info.shape.join(', ')}], the config implies [${shape.join(', ')}]`);
      tensors.set(name, await ck.toFloat32(name));
    }
    return Encoder.fromTensors(dev, cfg, tensors, opts);
  }

  /** From f32 tensors by HF name (encoderTensorShapes lists them): checkpoints, and random weights for benchmarks. */
  static fromTensors(dev: TesseraDevice, cfg: EncoderConfig, tensors: ReadonlyMap<string, Float32Array>, opts: EncoderOptions = {}): Encoder {
    const H = cfg.hidden;
    const [h1, h2] = headNames(cfg);
    const host = (name: string, n: number, k: number): HostDense => ({ w: tensors.get(`${name}.weight`)!, b: tensors.get(`${name}.bias`)!, n, k });
    const head = h1 && h2 ? [host(h1, H, H), host(h2, cfg.numLabels, H)] : [];
    const f16 = opts.weights === 'f16' || (opts.weights === 'auto' && dev.caps.features.has('shader-f16'));
    if (opts.weights === 'f16' && !dev.caps.features.has('shader-f16')) throw new RangeError('encoder: f16 weights need a device with shader-f16 (the prefill GEMMs over f16 weights use it); use f32 or auto');
    return new Encoder(dev, cfg, tensors, head, f16 ? 'float16' : 'float32');
  }

  /** Tokens a text of `n` tokens is padded to. */
  static bucket(n: number): number {
    return Math.max(8, 2 ** Math.ceil(Math.log2(Math.max(1, n))));
  }

  /** B sequences of T rows each ([B * T, H] activations; attention per sequence, its padding masked by len<b>). */
  private async compile(B: number, T: number) {
    const { cfg } = this;
    const H = cfg.hidden;
    const D = H / cfg.heads;
    const R = B * T;
    const s = new StepBuilder();
    const ids = storageBuffer(this.dev, R * 4, `encoder.ids.${B}x${T}`);
    const pos = storageBuffer(this.dev, R * 4, `encoder.pos.${B}x${T}`);
    const types = storageBuffer(this.dev, R * 4, `encoder.types.${B}x${T}`);
    const out = storageBuffer(this.dev, R * H * 4, `encoder.hidden.${B}x${T}`);
    const final: StepTensor = { buffer: out, dtype: 'float32', shape: [R, H] };
    const u32 = (buffer: GPUBuffer): StepTensor => ({ buffer, dtype: 'uint32', shape: [R] });
    const gather = (table: Tensor, idx: StepTensor, label: string) => {
      const o = s.act(label, [R, H]);
      s.op('gather', { ids: idx, table, out: o });
      return o;
    };
    const add = (a: StepTensor, b: StepTensor, label: string) => {
      const o = s.act(label, [R, H]);
      s.op('residual', { a, b, out: o });
      return o;
    };
    const norm = (x: StepTensor, p: Dense, label: string, to?: StepTensor) => {
      const o = to ?? s.act(label, [R, H]);
      s.op('layernorm', { x, weight: p.w, bias: p.b, out: o }, { eps: cfg.eps });
      return o;
    };
    const dense = (x: StepTensor, p: Dense, n: number, label: string, activation: Activation = 'none') => {
      const y = s.act(label, [R, n]);
      s.op('linear', { x, w: p.w, y });
      s.op('bias_act', { x: y, bias: p.b }, { activation });
      return y;
    };
    // sequence b's rows of a [R, H] activation, as [T, heads, D] (offsets are multiples of 8 rows: 256-byte aligned)
    const seq = (t: StepTensor, b: number): StepTensor => ({ ...t, offset: (t.offset ?? 0) + b * T * H * 4, shape: [T, cfg.heads, D] });
    let h = add(add(gather(this.emb.word, u32(ids), 'word'), gather(this.emb.pos, u32(pos), 'pos'), 'wp'), gather(this.emb.type, u32(types), 'type'), 'emb');
    h = norm(h, this.emb.ln, 'emb.ln', cfg.layers === 0 ? final : undefined);
    this.layers.forEach((L, i) => {
      const q = dense(h, L.q, H, `l${i}.q`);
      const k = dense(h, L.k, H, `l${i}.k`);
      const v = dense(h, L.v, H, `l${i}.v`);
      const a = s.act(`l${i}.attn`, [R, H]);
      const none: StepTensor = { buffer: ids, dtype: 'uint32', shape: [1] };
      for (let b = 0; b < B; b++) {
        s.op('attention', { q: seq(q, b), k: seq(k, b), v: seq(v, b), kvLen: none, pageTable: none, out: seq(a, b) }, { causal: 0, start_pos: 0, kv_len: dyn(`len${b}`) });
      }
      const o = dense(a, L.o, H, `l${i}.o`);
      h = norm(add(o, h, `l${i}.res1`), L.ln1, `l${i}.ln1`);
      const f = dense(dense(h, L.up, cfg.intermediate, `l${i}.up`, cfg.activation), L.down, H, `l${i}.down`);
      h = norm(add(f, h, `l${i}.res2`), L.ln2, `l${i}.ln2`, i === cfg.layers - 1 ? final : undefined);
    });
    const program = await Program.compile(this.ops, s, `encoder.${B}x${T}`);
    return { program, ids, pos, types, out };
  }

  private check(ids: readonly number[], typeIds?: readonly number[]): void {
    const { cfg } = this;
    const L = ids.length;
    if (L === 0) throw new RangeError('encoder: an empty sequence has no hidden states');
    if (L + cfg.positionOffset > cfg.maxPositions) throw new RangeError(`encoder: ${L} tokens exceed max_position_embeddings ${cfg.maxPositions}${cfg.positionOffset ? ` (positions start at ${cfg.positionOffset})` : ''}`);
    for (const [i, id] of ids.entries()) if (!Number.isInteger(id) || id < 0 || id >= cfg.vocabSize) throw new RangeError(`encoder: token ${i} is ${id}, outside the vocabulary [0, ${cfg.vocabSize})`);
    if (typeIds) {
      if (typeIds.length !== L) throw new RangeError(`encoder: ${typeIds.length} token types for ${L} tokens`);
      for (const t of typeIds) if (!Number.isInteger(t) || t < 0 || t >= cfg.typeVocabSize) throw new RangeError(`encoder: token type ${t} outside [0, ${cfg.typeVocabSize})`);
    }
  }

  /** Last-layer hidden states of one sequence of token ids (token types default to 0). */
  async forward(ids: readonly number[], typeIds?: readonly number[]): Promise<EncoderOutput> {
    return (await this.forwardBatch([{ ids, ...(typeIds ? { typeIds } : {}) }]))[0]!;
  }

  /**
   * Last-layer hidden states of several sequences in one run: padded to the bucket of the longest (powers of two from
   * 8) and to a power-of-two count of sequences (at most 64 per run; more run in several), each sequence's padding
   * masked out of its attention by its length.
   */
  async forwardBatch(seqs: readonly { ids: readonly number[]; typeIds?: readonly number[] }[], opts: { kernelTimes?: KernelTime[] } = {}): Promise<EncoderOutput[]> {
    const { cfg } = this;
    for (const q of seqs) this.check(q.ids, q.typeIds);
    const out: EncoderOutput[] = [];
    for (let first = 0; first < seqs.length; first += Encoder.MAX_BATCH) {
      const part = seqs.slice(first, first + Encoder.MAX_BATCH);
      const B = 2 ** Math.ceil(Math.log2(part.length));
      const T = Encoder.bucket(Math.max(...part.map((q) => q.ids.length)));
      const key = `${B}x${T}`;
      let b = this.buckets.get(key);
      if (!b) this.buckets.set(key, (b = await this.compile(B, T)));
      const ids = new Uint32Array(B * T).fill(cfg.padTokenId);
      const types = new Uint32Array(B * T);
      const vars: Record<string, number> = {};
      for (let j = 0; j < B; j++) {
        const q = part[j];
        vars[`len${j}`] = q ? q.ids.length : 1; // an empty slot: one pad token
        if (!q) continue;
        ids.set(q.ids, j * T);
        if (q.typeIds) types.set(q.typeIds, j * T);
      }
      writeBuffer(this.dev.device, b.ids, ids);
      writeBuffer(this.dev.device, b.pos, Uint32Array.from({ length: B * T }, (_, i) => Math.min(cfg.maxPositions - 1, cfg.positionOffset + (i % T))));
      writeBuffer(this.dev.device, b.types, types);
      // opts.kernelTimes: per-dispatch GPU times appended (devices created with timestamps; benchmarks)
      const rec = new Recorder(this.dev, { timestamps: opts.kernelTimes !== undefined });
      b.program.record(rec, vars);
      const times = await rec.submit();
      opts.kernelTimes?.push(...times);
      const all = await readFloat32(this.dev.device, b.out, B * T * cfg.hidden);
      part.forEach((q, j) => out.push({ hidden: all.slice(j * T * cfg.hidden, (j * T + q.ids.length) * cfg.hidden), tokens: q.ids.length }));
    }
    return out;
  }

  /** Sequences per compiled run (more run in several). */
  static readonly MAX_BATCH = 64;

  /** Scores of the classification head for one sequence's hidden states (BERT: pooler then classifier; RoBERTa: dense, tanh, out_proj on the first token). */
  classify(hidden: Float32Array): Float32Array {
    if (this.headWeights.length !== 2) throw new Error(`${this.cfg.architecture} has no classification head`);
    const [a, c] = this.headWeights as [HostDense, HostDense];
    const x = hidden.subarray(0, this.cfg.hidden);
    return matvec(c, Float32Array.from(matvec(a, x), Math.tanh));
  }

  destroy(): void {
    for (const b of this.buckets.values()) {
      b.program.destroy();
      for (const x of [b.ids, b.pos, b.types, b.out]) x.destroy();
    }
    this.buckets.clear();
    for (const x of this.owned) x.destroy();
  }
}

function matvec(d: HostDense, x: Float32Array): Float32Array {
  const y = new Float32Array(d.n);
  for (let n = 0; n < d.n; n++) {
    let s = d.b[n]!;
    for (let k = 0; k < d.k; k++) s += d.w[n * d.k + k]! * x[k]!;
    y[n] = s;
  }
  return y;
}

/** Open an encoder checkpoint folder (config.json + safetensors). */
export async function loadEncoder(dev: TesseraDevice, path: string | ModelFiles, opts: EncoderOptions = {}): Promise<{ encoder: Encoder; files: ModelFiles }> {
  const files = typeof path === 'string' ? await (await getHost(`opening the encoder ${path}`)).openPath(path) : path;
  if (!files) throw new ModelConfigError(String(path), '(path)', 'does not exist: pass a Hugging Face model folder');
  if (files.kind !== 'folder') throw new ModelConfigError(files.path, '(path)', 'an encoder loads from a Hugging Face model folder (config.json and safetensors)');
  const cf = await files.open('config.json');
  if (!cf) throw new ModelConfigError(files.pathOf('config.json'), '(file)', 'missing: an encoder folder needs config.json');
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(await readText(cf)) as Record<string, unknown>;
  } catch (e) {
    throw new ModelConfigError(cf.path, '(json)', `is not valid JSON: ${(e as Error).message}`);
  }
  const ck = await openCheckpoint(files);
  const cfg = encoderConfigFromHF(json, cf.path, (n) => ck.has(n));
  return { encoder: await Encoder.fromCheckpoint(dev, ck, cfg, opts), files };
}
