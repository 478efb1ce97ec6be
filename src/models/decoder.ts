/**
 * The decoder forward pass, shared by every family (Llama, Qwen2, Qwen3, Gemma 3): a list of op calls. Family
 * differences are config switches (biases, q/k norms, sandwich norms, activation, embedding scale, windows).
 * Each op resolves through its kernel contract (src/ops/contracts), so kernel choice and dispatch are data.
 */
import { uploadBuffer, STORAGE_USAGE } from '../gpu/buffers.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import { Recorder } from '../gpu/recorder.ts';
import { OpRunner, type Tensor } from '../ops/runner.ts';
import type { DecoderConfig } from './config.ts';
import { layerRope, ropeInvFreq, ropeTables } from './rope.ts';
import type { GpuWeights } from './weights.ts';

export interface KvCache {
  capacity: number;
  dtype: 'float32' | 'float16';
  k: Tensor[];
  v: Tensor[];
  /** Positions filled so far. */
  length: number;
}

interface RopeTable {
  cos: Tensor;
  sin: Tensor;
}

export class Decoder {
  readonly ops: OpRunner;
  private ropeTables = new Map<string, RopeTable>();
  private readonly ropeByLayer: RopeTable[] = [];
  private readonly dummyU32: Tensor;
  readonly maxPositions: number;

  constructor(
    readonly dev: TesseraDevice,
    readonly cfg: DecoderConfig,
    readonly weights: GpuWeights,
    opts: { maxPositions?: number; ropeInterleaved?: boolean; kvDtype?: 'float32' | 'float16' } = {},
  ) {
    this.kvDtype = opts.kvDtype ?? (weights.mode !== 'f32' && dev.caps.features.has('shader-f16') ? 'float16' : 'float32');
    this.ops = new OpRunner(dev);
    this.maxPositions = Math.min(opts.maxPositions ?? 4096, cfg.maxPositions);
    this.ropeInterleaved = opts.ropeInterleaved ? 1 : 0;
    for (let l = 0; l < cfg.numLayers; l++) {
      const { theta, scaling } = layerRope(cfg, l);
      const key = JSON.stringify({ theta, scaling });
      let t = this.ropeTables.get(key);
      if (!t) {
        const { cos, sin } = ropeTables(ropeInvFreq(cfg.headDim, theta, scaling), this.maxPositions);
        const shape = [this.maxPositions, cfg.headDim / 2];
        t = {
          cos: { buffer: uploadBuffer(dev.device, cos, 'rope.cos'), dtype: 'float32', shape },
          sin: { buffer: uploadBuffer(dev.device, sin, 'rope.sin'), dtype: 'float32', shape },
        };
        this.ropeTables.set(key, t);
      }
      this.ropeByLayer.push(t);
    }
    this.dummyU32 = { buffer: uploadBuffer(dev.device, new Uint32Array([0]), 'attention.unused'), dtype: 'uint32', shape: [1] };
  }

  private readonly ropeInterleaved: number;

  /**
   * KV cache dtype: f16 where the device has shader-f16 (half the attention bandwidth), except with f32 weights
   * (`--quant f32` asks for full precision end to end); f32 otherwise.
   */
  readonly kvDtype: 'float32' | 'float16';

  createKvCache(capacity = this.maxPositions, dtype?: 'float32' | 'float16'): KvCache {
    const cfg = this.cfg;
    const dt = dtype ?? this.kvDtype;
    const bytes = Math.ceil((capacity * cfg.numKvHeads * cfg.headDim * (dt === 'float16' ? 2 : 4)) / 4) * 4;
    const mk = (name: string): Tensor => ({
      buffer: this.dev.device.createBuffer({ size: bytes, usage: STORAGE_USAGE, label: name }),
      dtype: dt,
      shape: [capacity, cfg.numKvHeads, cfg.headDim],
    });
    const k: Tensor[] = [];
    const v: Tensor[] = [];
    for (let l = 0; l < cfg.numLayers; l++) {
      k.push(mk(`kv.k.${l}`));
      v.push(mk(`kv.v.${l}`));
    }
    return { capacity, dtype: dt, k, v, length: 0 };
  }

  /** Append T rows of keys/values ([T, kv_heads, head_dim] f32) to layer l's cache at position `start`. */
  private async writeKv(rec: Recorder, kv: KvCache, l: number, k: GPUBuffer, v: GPUBuffer, start: number, T: number): Promise<void> {
    const row = this.cfg.numKvHeads * this.cfg.headDim;
    if (kv.dtype === 'float32') {
      rec.copy(k, 0, kv.k[l]!.buffer, start * row * 4, T * row * 4);
      rec.copy(v, 0, kv.v[l]!.buffer, start * row * 4, T * row * 4);
      return;
    }
    const src = (b: GPUBuffer): Tensor => ({ buffer: b, dtype: 'float32', shape: [T, this.cfg.numKvHeads, this.cfg.headDim] });
    await this.ops.record(rec, 'kv_write', { k: src(k), v: src(v), kCache: kv.k[l]!, vCache: kv.v[l]! }, { start_pos: start });
  }

  destroyKvCache(kv: KvCache): void {
    for (const t of [...kv.k, ...kv.v]) t.buffer.destroy();
  }

  private act(rec: Recorder, name: string, shape: number[]): Tensor {
    const n = shape.reduce((a, d) => a * d, 1);
    const buffer = this.dev.buffers.acquire(n * 4, STORAGE_USAGE, name);
    rec.releaseAfterSubmit(buffer);
    return { buffer, dtype: 'float32', shape };
  }

  private async linear(rec: Recorder, x: Tensor, w: string, y: Tensor, biasName?: string): Promise<Tensor> {
    const wt = this.weights.get(w);
    await this.ops.record(rec, 'linear', { x, w: wt, y });
    if (biasName && this.weights.tensors.has(biasName)) {
      await this.ops.record(rec, 'bias_add', { data: y, bias: this.weights.get(biasName) });
    }
    return y;
  }

  private async norm(rec: Recorder, x: Tensor, weight: string, out: Tensor, residual?: Tensor, mode: 0 | 1 | 2 = 0): Promise<void> {
    await this.ops.record(
      rec,
      'rmsnorm',
      { x, weight: this.weights.get(weight), residual: residual ?? x, out },
      { eps: this.cfg.rmsNormEps, has_residual: mode },
    );
  }

  /**
   * Record the forward pass of `ids` (a GPU u32 tensor of T token ids) at positions kv.length.., append their
   * keys/values to the cache, and return the final hidden states of the last `outRows` rows (normed), [outRows, H].
   */
  async recordForward(rec: Recorder, ids: Tensor, kv: KvCache, outRows = 1): Promise<Tensor> {
    const cfg = this.cfg;
    const T = ids.shape[0]!;
    const start = kv.length;
    if (start + T > kv.capacity) {
      throw new RangeError(`context full: ${start} + ${T} tokens exceed the KV cache capacity ${kv.capacity} (max positions ${this.maxPositions})`);
    }
    const H = cfg.hiddenSize;
    const D = cfg.headDim;
    const nH = cfg.numHeads;
    const nKV = cfg.numKvHeads;
    // Activation buffers are shared by all layers (the GPU runs the recorded ops in order), so memory does not
    // grow with depth and every decode step binds the same buffers.
    const scratch = new Map<string, Tensor>();
    const buf = (name: string, shape: number[]): Tensor => {
      let t = scratch.get(name);
      if (!t) scratch.set(name, (t = this.act(rec, name, shape)));
      return { ...t, shape };
    };
    const kvRow = nKV * D;
    let h = buf('embed', [T, H]);
    await this.ops.record(rec, 'embed', { ids, table: this.weights.get('model.embed_tokens.weight'), out: h });
    if (cfg.embedScale !== 1) {
      const scaled = buf('hA', [T, H]);
      await this.ops.record(rec, 'scale', { x: h, out: scaled }, { scale: Math.fround(cfg.embedScale) });
      h = scaled;
    }
    const x = buf('x', [T, H]);
    for (let l = 0; l < cfg.numLayers; l++) {
      const p = `model.layers.${l}.`;
      await this.norm(rec, h, p + 'input_layernorm.weight', x);
      const q = await this.linear(rec, x, p + 'self_attn.q_proj.weight', buf('q', [T, nH * D]), p + 'self_attn.q_proj.bias');
      const k = await this.linear(rec, x, p + 'self_attn.k_proj.weight', buf('k', [T, kvRow]), p + 'self_attn.k_proj.bias');
      const v = await this.linear(rec, x, p + 'self_attn.v_proj.weight', buf('v', [T, kvRow]), p + 'self_attn.v_proj.bias');
      let q3: Tensor = { ...q, shape: [T, nH, D] };
      let k3: Tensor = { ...k, shape: [T, nKV, D] };
      if (cfg.qkNorm) {
        const qn = buf('qn', [T, nH, D]);
        const kn = buf('kn', [T, nKV, D]);
        await this.norm(rec, q3, p + 'self_attn.q_norm.weight', qn);
        await this.norm(rec, k3, p + 'self_attn.k_norm.weight', kn);
        q3 = qn;
        k3 = kn;
      }
      const rope = this.ropeByLayer[l]!;
      await this.ops.record(rec, 'rope', { x: q3, cos: rope.cos, sin: rope.sin }, { start_pos: start, interleaved: this.ropeInterleaved });
      await this.ops.record(rec, 'rope', { x: k3, cos: rope.cos, sin: rope.sin }, { start_pos: start, interleaved: this.ropeInterleaved });
      await this.writeKv(rec, kv, l, k3.buffer, v.buffer, start, T);
      const att = buf('att', [T, nH, D]);
      await this.ops.record(
        rec,
        'attention',
        { q: q3, k: kv.k[l]!, v: kv.v[l]!, kvLen: this.dummyU32, pageTable: this.dummyU32, out: att },
        { start_pos: start, kv_len: start + T, scale: Math.fround(cfg.attnScale), softcap: cfg.attnSoftcap, sliding_window: cfg.slidingWindow[l]! },
      );
      const o = await this.linear(rec, { ...att, shape: [T, nH * D] }, p + 'self_attn.o_proj.weight', buf('o', [T, H]));
      // h -> h2 (after attention) -> h3 (after the MLP, written over h, which is no longer read)
      const h2 = buf(h.buffer === scratch.get('hB')?.buffer ? 'hA' : 'hB', [T, H]);
      if (cfg.sandwichNorm) await this.norm(rec, o, p + 'post_attention_layernorm.weight', h2, h, 2);
      else await this.ops.record(rec, 'residual', { a: h, b: o, out: h2 });
      await this.norm(rec, h2, p + (cfg.sandwichNorm ? 'pre_feedforward_layernorm.weight' : 'post_attention_layernorm.weight'), x);
      const I = cfg.intermediateSize;
      const g = await this.linear(rec, x, p + 'mlp.gate_proj.weight', buf('g', [T, I]));
      const u = await this.linear(rec, x, p + 'mlp.up_proj.weight', buf('u', [T, I]));
      const a = buf('a', [T, I]);
      await this.ops.record(rec, 'glu', { gate: g, up: u, out: a }, { activation: cfg.activation });
      const d = await this.linear(rec, a, p + 'mlp.down_proj.weight', buf('d', [T, H]));
      const h3: Tensor = { ...h, shape: [T, H] };
      if (cfg.sandwichNorm) await this.norm(rec, d, p + 'post_feedforward_layernorm.weight', h3, h2, 2);
      else await this.ops.record(rec, 'residual', { a: h2, b: d, out: h3 });
      h = h3;
    }
    kv.length = start + T;
    const rows = Math.min(outRows, T);
    let last = h;
    if (rows < T) {
      last = this.act(rec, 'last', [rows, H]);
      rec.copy(h.buffer, (T - rows) * H * 4, last.buffer, 0, rows * H * 4);
    }
    const normed = this.act(rec, 'final', [rows, H]);
    await this.norm(rec, last, 'model.norm.weight', normed);
    return normed;
  }

  /** Record the LM head on normed hidden states [rows, H] -> logits [rows, vocab]. */
  async recordLogits(rec: Recorder, hidden: Tensor): Promise<Tensor> {
    const rows = hidden.shape[0]!;
    const head = this.weights.tensors.has('lm_head.weight') ? 'lm_head.weight' : 'model.embed_tokens.weight';
    return this.linear(rec, hidden, head, this.act(rec, 'logits', [rows, this.cfg.vocabSize]));
  }

  /** Upload token ids as a GPU tensor (destroyed after the recorder's submit). */
  idsTensor(rec: Recorder, ids: readonly number[]): Tensor {
    const buffer = uploadBuffer(this.dev.device, Uint32Array.from(ids), 'ids');
    rec.destroyAfterSubmit(buffer);
    return { buffer, dtype: 'uint32', shape: [ids.length] };
  }

  newRecorder(opts: { timestamps?: boolean } = {}): Recorder {
    return new Recorder(this.dev, opts);
  }
}
