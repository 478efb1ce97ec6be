/**
 * The decoder forward pass, shared by every family (Llama, Qwen2, Qwen3, Gemma 3): a list of op calls emitted into
 * an OpSink (src/program), compiled once per shape into a program and replayed per token. Family differences are
 * config switches (biases, q/k norms, sandwich norms, activation, embedding scale, windows). Each op resolves
 * through its kernel contract (src/ops/contracts), so kernel choice and dispatch are data; positions are step
 * variables that reach the contracts' dynamic attributes.
 */
import { DTYPE_BYTES } from '../contracts/index.ts';
import { storageBuffer, uploadBuffer } from '../gpu/buffers.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import { Recorder } from '../gpu/recorder.ts';
import { opAccepts, opPlan, opVariant, OpRunner, type Tensor, type TensorSpec } from '../ops/runner.ts';
import { plus, type Dyn, type OpSink, type StepTensor } from '../program/step.ts';
import type { DecoderConfig } from './config.ts';
import { layerRope, ropeAttentionScale, ropeInvFreq, ropeTables } from './rope.ts';
import type { GpuWeights } from './weights.ts';

/** Where the LM head writes the greedy token it picks (Decoder.headPickWords): the sampler state, its area's first word, the NaN/Inf count's word. */
export interface HeadPick {
  state: StepTensor;
  base: number;
  word: number;
}

export interface KvCache {
  capacity: number;
  dtype: 'float32' | 'float16';
  k: Tensor[];
  v: Tensor[];
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
  /** A [1] f32 / uint8 tensor bound where a contract input is absent (MoE biases, scales of float experts). */
  private readonly dummyF32: Tensor;
  private readonly dummyU8: Tensor;
  readonly maxPositions: number;

  constructor(
    readonly dev: TesseraDevice,
    readonly cfg: DecoderConfig,
    readonly weights: GpuWeights,
    opts: { maxPositions?: number; ropeInterleaved?: boolean; kvDtype?: 'float32' | 'float16'; fuseProjections?: boolean; fuseGemv?: boolean } = {},
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
        const { cos, sin } = ropeTables(ropeInvFreq(cfg.headDim, theta, scaling), this.maxPositions, ropeAttentionScale(scaling));
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
    this.dummyF32 = { buffer: uploadBuffer(dev.device, new Float32Array([0]), 'moe.unused'), dtype: 'float32', shape: [1] };
    this.dummyU8 = { buffer: uploadBuffer(dev.device, new Uint8Array(4), 'moe.unused'), dtype: 'uint8', shape: [1] };
    if (opts.fuseProjections ?? true) this.fuseProjections();
    if (opts.fuseGemv ?? true) this.findFusedGemv();
    this.findHeadNormFused();
  }

  /**
   * Layers whose single-token step runs as 4 GEMVs with the element-wise work folded in (linear_fused), rope_kv and
   * attention: q|k|v reads rmsnorm(h) (input norm in its prologue), o_proj adds into h (residual in its epilogue),
   * gate|up reads the post-attention norm of h, down_proj reads act(gate) * up and adds into h. Pre-norm layers with
   * fused q|k|v and gate|up weights the contracts accept (f16, Q4_K, Q6_K, Q8_0 on devices with subgroups); others
   * emit the separate ops.
   */
  private readonly fusedGemv = new Set<number>();

  /** How many layers run the fused single-token GEMVs. */
  get fusedGemvLayers(): number {
    return this.fusedGemv.size;
  }

  /**
   * Fused layers whose q|k|v GEMV also applies rope and writes the KV cache (linear_rope_kv: one dispatch instead of
   * linear_fused + rope_kv), where the contract accepts it (Q4_K, full rotary dims, no q|k|v bias or q/k norms).
   */
  private readonly ropeFusedQkv = new Set<number>();

  /**
   * Fused layers whose q|k and v weights differ in format (splitQkv) and run as two linear_rope_kv calls, the q|k one
   * rotating and writing q and the keys, the v one writing the values (two dispatches instead of linear_fused twice
   * and rope_kv). Tunable ropeKvSplit.
   */
  private readonly ropeSplitQkv = new Set<number>();

  /** How many split q|k|v layers run their two GEMVs with rope and the cache write inside. */
  get ropeSplitLayers(): number {
    return this.ropeSplitQkv.size;
  }

  /** How many fused layers run rope and the KV-cache write inside the q|k|v GEMV. */
  get ropeFusedLayers(): number {
    return this.ropeFusedQkv.size;
  }

  private findFusedGemv(): void {
    const cfg = this.cfg;
    if (cfg.sandwichNorm || cfg.attnSinks) return;
    const H = cfg.hiddenSize;
    const I = cfg.intermediateSize;
    const eps = cfg.rmsNormEps;
    // the cache a session's first decode program runs on (for the prefetch of o_proj's weight)
    const shortCache = this.decodePrefix(this.maxPositions) ?? this.maxPositions;
    for (let l = 0; l < cfg.numLayers; l++) {
      const split = this.splitQkv.has(l);
      if (!(this.fusedQkv.has(l) || split) || !this.fusedGateUp.has(l)) continue;
      const p = `model.layers.${l}.`;
      const w = (n: string) => this.weights.tensors.get(p + n);
      // the GEMVs that read the normed input for q, k and v: one, or q|k and v
      const qkvParts = split ? [w('self_attn.qk_proj.weight'), w('self_attn.v_proj.weight')] : [w('self_attn.qkv_proj.weight')];
      const o = w('self_attn.o_proj.weight');
      const gu = w('mlp.gate_up_proj.weight');
      const down = w('mlp.down_proj.weight');
      if (qkvParts.some((t) => !t) || !o || !gu || !down) continue;
      const ok =
        qkvParts.every((t) => opAccepts(this.dev, 'linear_fused', { x: f32([1, H]), w: t!, gamma: f32([H]), y: f32([1, t!.shape[0]!]) }, { prologue: 'rmsnorm', eps })) &&
        opAccepts(this.dev, 'linear_fused', { x: f32([1, o.shape[1]!]), w: o, y: f32([1, H]) }, { accumulate: 1 }) &&
        opAccepts(this.dev, 'linear_fused', { x: f32([1, H]), w: gu, gamma: f32([H]), y: f32([1, 2 * I]) }, { prologue: 'rmsnorm', eps }) &&
        opAccepts(this.dev, 'linear_fused', { x: f32([1, 2 * I]), w: down, y: f32([1, H]) }, { prologue: 'glu', activation: cfg.activation, accumulate: 1 });
      const D = cfg.headDim;
      const nKV = cfg.numKvHeads;
      const kvCache = { dtype: this.kvDtype, shape: [1, nKV, D] };
      const rope = this.ropeByLayer[l]!;
      const ropeOk = opAccepts(this.dev, 'rope_kv', { qk: f32([1, cfg.numHeads + nKV, D]), v: f32([1, nKV, D]), cos: rope.cos, sin: rope.sin, kCache: kvCache, vCache: kvCache, q: f32([1, cfg.numHeads, D]) }, { interleaved: this.ropeInterleaved });
      if (!ok || !ropeOk) continue;
      this.fusedGemv.add(l);
      const plainQkv = !cfg.qkNorm && !this.weights.tensors.has(p + 'self_attn.qkv_proj.bias');
      // each GEMV that reads the normed input (q|k|v, or q|k and v in two formats) with rope and the cache write of its heads
      const ropeSpec = (t: Tensor) => ({ x: f32([1, H]), w: t, gamma: f32([H]), cos: rope.cos, sin: rope.sin, kCache: kvCache, vCache: kvCache, q: f32([1, cfg.numHeads, D]) });
      if (plainQkv && qkvParts.every((t) => opAccepts(this.dev, 'linear_rope_kv', ropeSpec(t!), { eps, interleaved: this.ropeInterleaved }))) (split ? this.ropeSplitQkv : this.ropeFusedQkv).add(l);
      const q8 = q8Activations(I);
      if (
        I % 32 === 0 &&
        opAccepts(this.dev, 'linear_glu_q8', { x: f32([1, H]), w: gu, gamma: f32([H]), ...q8 }, this.gluAttrs) &&
        opAccepts(this.dev, 'linear_q8', { ...q8, w: down, y: f32([1, H]) }, { accumulate: 1 })
      )
        this.q8Mlp.add(l);
      // attention's output rounded to int8 by its combine pass for the o_proj GEMV
      const q8o = q8Activations(cfg.numHeads * D);
      if (
        (cfg.numHeads * D) % 32 === 0 &&
        opAccepts(this.dev, 'attention', { ...this.attentionSpec(this.maxPositions), ...q8o }, this.attentionAttrs(l)) &&
        opAccepts(this.dev, 'linear_q8', { ...q8o, w: o, y: f32([1, H]) }, { accumulate: 1 })
      )
        this.q8Attention.add(l);
      if (this.prefetchesO(l, shortCache, o)) this.prefetchO.add(l);
      // o_proj hands gate|up its activations: rmsnorm(h) * post-norm rounded to int8 in o_proj's epilogue; gate|up on
      // them writes act(gate) * up in blocks of 32, or in runs of 16 where the down GEMV reads those (tunable gluRuns)
      const ho = handoffActivations(H);
      const oHandoff = { ng: f32([H]), nq: ho.xq, nm: ho.xm };
      const runs = handoffActivations(I);
      const gluRunsPlan =
        this.q8Mlp.has(l) && I % 16 === 0 ? opPlan(this.dev, 'linear_glu_q8', { xq: ho.xq, xm: ho.xm, w: gu, nq: runs.xq, nm: runs.xm }, this.gluAttrs) : undefined;
      const runsOk = gluRunsPlan !== undefined && opAccepts(this.dev, 'linear_q8', { xq: runs.xq, xm: runs.xm, w: down, y: f32([1, H]) }, { accumulate: 1 });
      if (
        this.q8Mlp.has(l) &&
        (runsOk || opAccepts(this.dev, 'linear_glu_q8', { xq: ho.xq, xm: ho.xm, w: gu, ...q8 }, this.gluAttrs)) &&
        (this.q8Attention.has(l)
          ? opAccepts(this.dev, 'linear_q8', { ...q8o, w: o, y: f32([1, H]), ...oHandoff }, { accumulate: 1 })
          : opAccepts(this.dev, 'linear_fused', { x: f32([1, o.shape[1]!]), w: o, y: f32([1, H]), ...oHandoff }, { accumulate: 1 }))
      )
        this.handoffMlp.add(l);
      // attention and o_proj linked into one dispatch (tunable attnChain of linear_fused; o_proj on f32 activations):
      // attention is asked for o_proj's workgroup size (attribute lanes) where its program's cache allows
      if (!this.q8Attention.has(l)) {
        const oOut = this.handoffMlp.has(l) ? oHandoff : {};
        const oPlan = opPlan(this.dev, 'linear_fused', { x: f32([1, o.shape[1]!]), w: o, y: f32([1, H]), ...oOut }, { accumulate: 1 });
        const lanes = Number(oPlan?.derived.workgroupSize);
        if (oPlan?.derived.attnChain === true && Number.isInteger(lanes) && lanes > 0) this.chainAttn.set(l, lanes);
      }
      // attention on a short cache and o_proj with its norm handoff as one dispatch (attention_oproj, tunable attnOproj),
      // in the decode programs whose cache it takes (decided again on each program's cache: attnOprojOn)
      if (!this.q8Attention.has(l) && this.handoffMlp.has(l) && this.attnOprojOn(l, shortCache)) this.attnOproj.add(l);
      // gate|up on the handoff writes act(gate) * up in runs of 16 for the down GEMV (tunable gluRuns)
      if (this.handoffMlp.has(l) && runsOk) {
        this.gluRuns.add(l);
        // o_proj, gate|up and down linked into one dispatch (tunable mlpChain of linear_glu_q8)
        if (gluRunsPlan?.derived.mlpChain === true) this.chainMlp.add(l);
      }
    }
    // layer l's down GEMV hands layer l + 1's q|k|v GEMV its activations (rmsnorm(h) * l + 1's input norm)
    for (let l = 0; l + 1 < cfg.numLayers; l++) {
      // (a down GEMV on runs of 16 writes no handoff: no variant does both)
      if (!this.q8Mlp.has(l) || this.gluRuns.has(l) || !this.ropeFusedQkv.has(l + 1)) continue;
      const down = this.weights.tensors.get(`model.layers.${l}.mlp.down_proj.weight`)!;
      const next = `model.layers.${l + 1}.`;
      const rope = this.ropeByLayer[l + 1]!;
      const kvCache = { dtype: this.kvDtype, shape: [1, cfg.numKvHeads, cfg.headDim] };
      const ho = handoffActivations(H);
      if (
        opAccepts(this.dev, 'linear_q8', { ...q8Activations(I), w: down, y: f32([1, H]), ng: f32([H]), nq: ho.xq, nm: ho.xm }, { accumulate: 1 }) &&
        opAccepts(
          this.dev,
          'linear_rope_kv',
          { xq: ho.xq, xm: ho.xm, w: this.weights.tensors.get(next + 'self_attn.qkv_proj.weight')!, cos: rope.cos, sin: rope.sin, kCache: kvCache, vCache: kvCache, q: f32([1, cfg.numHeads, cfg.headDim]) },
          { eps, interleaved: this.ropeInterleaved },
        )
      )
        this.handoffQkv.add(l + 1);
    }
    // q|k|v with rope and attention linked into one dispatch (tunable attnChain of linear_rope_kv), in the GEMV's
    // workgroup size (on its activations as the step gives them: the norm handoff or rmsnorm in its prologue)
    for (const l of this.ropeFusedQkv) {
      const p = `model.layers.${l}.`;
      const w = this.weights.tensors.get(p + 'self_attn.qkv_proj.weight');
      if (!w) continue;
      const rope = this.ropeByLayer[l]!;
      const kvCache = { dtype: this.kvDtype, shape: [1, cfg.numKvHeads, cfg.headDim] };
      const ho = handoffActivations(H);
      const acts: Record<string, TensorSpec> = this.handoffQkv.has(l) ? { xq: ho.xq, xm: ho.xm } : { x: f32([1, H]), gamma: f32([H]) };
      const plan = opPlan(this.dev, 'linear_rope_kv', { ...acts, w, cos: rope.cos, sin: rope.sin, kCache: kvCache, vCache: kvCache, q: f32([1, cfg.numHeads, cfg.headDim]) }, { eps, interleaved: this.ropeInterleaved });
      const lanes = Number(plan?.derived.workgroupSize);
      if (plan?.derived.attnChain === true && Number.isInteger(lanes) && lanes > 0) this.chainQkv.set(l, { lanes, tail: plan.derived.attnChainTail === true });
    }
  }

  /**
   * Fused layers whose gate|up GEMV reads its activations from o_proj's norm handoff (linear_glu_q8 on xq / xm, no
   * prologue): o_proj, which writes h, also rounds h * post_attention_layernorm to int8 (runs of 16, with each run's
   * scale, int8 sum and sum of h^2 for rmsnorm's scale). Tunable normHandoff of linear_glu_q8; in models with
   * layers whose q|k and v differ in format (llama.cpp's Q4_K_M mix, attribute mixedQkv) also handoffMixedQkv (off; "runs":
   * only the layers whose gate|up writes runs of 16 for their down GEMV, gluRuns below).
   */
  private readonly handoffMlp = new Set<number>();
  /**
   * Fused layers whose q|k|v GEMV (linear_rope_kv) reads its activations from the previous layer's down GEMV's norm
   * handoff (h * this layer's input_layernorm rounded in the down GEMV's epilogue). Tunable normHandoff of
   * linear_rope_kv.
   */
  private readonly handoffQkv = new Set<number>();

  /**
   * Layers whose gate|up GEMV (on o_proj's handoff) writes act(gate) * up in runs of 16 (q8h_glu16_rows: 32 rows a
   * workgroup, not 64) and whose down GEMV reads them (linear_q8 q8h_rows). Tunable gluRuns of linear_glu_q8.
   */
  private readonly gluRuns = new Set<number>();
  /** Layers whose o_proj, gate|up and down the step asks to run as one dispatch (tunable mlpChain; StepBuilder.link). */
  private readonly chainMlp = new Set<number>();
  /**
   * Layers (never q8Attention's) whose decode attention and o_proj the step asks to run as one dispatch (tunable
   * attnChain of linear_fused; with chainMlp, attention through down as one), with o_proj's workgroup size: each
   * program asks attention for it on its own cache (attention's attribute lanes; only its one-pass variant takes it)
   * and links where it accepts.
   */
  private readonly chainAttn = new Map<number, number>();
  /**
   * Layers whose q|k|v GEMV with rope (one linear_rope_kv call) and decode attention the step asks to run as one
   * dispatch (tunable attnChain of linear_rope_kv), with the GEMV's workgroup size: each program asks attention for it
   * on its own cache (attribute lanes) and links where it accepts. Where it links, attention does not link with o_proj.
   */
  private readonly chainQkv = new Map<number, { lanes: number; tail: boolean }>();

  /** linear_glu_q8's attributes: mixedQkv says whether the model's layers store q|k and v in different formats. */
  private get gluAttrs(): { eps: number; activation: string; mixedQkv: number } {
    return { eps: this.cfg.rmsNormEps, activation: this.cfg.activation, mixedQkv: this.splitQkv.size > 0 ? 1 : 0 };
  }

  /**
   * Fused layers whose decode attention also reads o_proj's weight (input pf) in workgroups of its own, so o_proj finds
   * it in the L2 (attention decode_short_lanes_pf; tunable weightPrefetch), decided when the decoder is built, on the
   * cache a session's first decode program runs on (the short prefix of decodePrefix where there is one). The plan
   * depends on the cache's capacity, so each program asks again (prefetchesO).
   */
  private readonly prefetchO = new Set<number>();

  /** How many layers' attention prefetches o_proj's weight (in the decode program on a short cache). */
  get prefetchLayers(): number {
    return this.prefetchO.size;
  }

  /** Whether layer l's attention on a `capacity`-position cache takes o_proj's weight to prefetch. */
  private prefetchesO(l: number, capacity: number, o: Tensor): boolean {
    return !this.q8Attention.has(l) && opAccepts(this.dev, 'attention', { ...this.attentionSpec(capacity), pf: o }, this.attentionAttrs(l));
  }

  /** How many layers ask for o_proj, gate|up and down as one dispatch (mlpChain). */
  get chainMlpLayers(): number {
    return this.chainMlp.size;
  }

  /**
   * Fused layers (with o_proj's norm handoff) whose decode attention on a short cache and o_proj run as one dispatch
   * (attention_oproj, tunable attnOproj): decided on the cache of a session's first decode program, and again on each
   * program's cache when its step is emitted.
   */
  private readonly attnOproj = new Set<number>();

  /** How many layers run attention and o_proj as one dispatch (attention_oproj) on a short cache. */
  get attnOprojLayers(): number {
    return this.attnOproj.size;
  }

  /** The counters attention_oproj's row blocks take tickets from: rows / 256 a layer, zero between dispatches. */
  private oprojSyncBuffer?: Tensor;

  /** Its words: a counter for each block of 256 rows of each layer's o_proj. */
  private get oprojSyncWords(): number {
    return Math.max(1, (this.cfg.numLayers * this.cfg.hiddenSize) / 256);
  }

  private get oprojSync(): Tensor {
    const n = this.oprojSyncWords;
    this.oprojSyncBuffer ??= { buffer: storageBuffer(this.dev, 4 * n, 'attention_oproj.sync'), dtype: 'uint32', shape: [n] };
    return this.oprojSyncBuffer;
  }

  /** attention_oproj's tensors and static attributes for layer l on a cache of `capacity` positions. */
  private attnOprojSpec(l: number, capacity: number) {
    const cfg = this.cfg;
    const H = cfg.hiddenSize;
    const ho = handoffActivations(H);
    const { q, k, v } = this.attentionSpec(capacity);
    const o = this.weights.tensors.get(`model.layers.${l}.self_attn.o_proj.weight`);
    const { scale, softcap, sliding_window } = this.attentionAttrs(l);
    return {
      tensors: { q, k, v, w: o!, y: f32([1, H]), ng: f32([H]), nq: ho.xq, nm: ho.xm, sync: { dtype: 'uint32', shape: [this.oprojSyncWords] } },
      attrs: { scale, softcap, sliding_window, sync_base: (l * H) / 256 },
    };
  }

  /** Whether layer l's attention on a `capacity`-position cache and its o_proj run as attention_oproj. */
  private attnOprojOn(l: number, capacity: number): boolean {
    if (!this.weights.tensors.has(`model.layers.${l}.self_attn.o_proj.weight`) || this.cfg.hiddenSize % 256 !== 0) return false;
    const { tensors, attrs } = this.attnOprojSpec(l, capacity);
    return opAccepts(this.dev, 'attention_oproj', tensors, attrs);
  }

  /** How many layers ask for attention and o_proj as one dispatch (attnChain). */
  get chainAttnLayers(): number {
    return this.chainAttn.size;
  }

  /** How many layers ask for q|k|v with rope and attention as one dispatch (attnChain of linear_rope_kv). */
  get chainQkvLayers(): number {
    return this.chainQkv.size;
  }

  /** How many layers hand act(gate) * up to the down GEMV in runs of 16. */
  get gluRunsLayers(): number {
    return this.gluRuns.size;
  }

  /** How many GEMVs a decode step runs on a norm handoff instead of an rmsnorm prologue (gate|up and q|k|v). */
  get normHandoffGemvs(): number {
    return this.handoffMlp.size + this.handoffQkv.size;
  }

  /** Fused layers whose attention also writes its output as int8 activations, read by the o_proj GEMV (linear_q8). */
  private readonly q8Attention = new Set<number>();

  /** How many fused layers hand int8 activations from attention to the o_proj GEMV. */
  get q8AttentionLayers(): number {
    return this.q8Attention.size;
  }

  /**
   * A prefix of a `capacity`-position KV cache on which single-token attention runs another plan than on the whole
   * cache (the attention contract's decode_short: one pass for short caches, where flash-decoding's two passes cost
   * more than their keys): the largest power of two below `capacity` where the chosen variant changes, else undefined.
   * A decode session compiles a second decode program on that prefix (the same buffers, fewer rows) and runs it while
   * the sequence fits in it.
   */
  decodePrefix(capacity: number): number | undefined {
    const whole = opVariant(this.dev, 'attention', this.attentionSpec(capacity), this.attentionAttrs(0));
    for (let n = 2 ** Math.ceil(Math.log2(capacity) - 1); n >= 16; n /= 2) {
      const v = opVariant(this.dev, 'attention', this.attentionSpec(n), this.attentionAttrs(0));
      if (v !== whole) return v === undefined ? undefined : n;
    }
    return undefined;
  }

  /** The tensors of single-token attention over a KV cache of `capacity` positions, as opAccepts asks about them. */
  private attentionSpec(capacity: number) {
    const cfg = this.cfg;
    const cache = { dtype: this.kvDtype, shape: [capacity, cfg.numKvHeads, cfg.headDim] };
    const u32 = { dtype: 'uint32', shape: [1] };
    return { q: f32([1, cfg.numHeads, cfg.headDim]), k: cache, v: cache, kvLen: u32, pageTable: u32, out: f32([1, cfg.numHeads, cfg.headDim]) };
  }

  /** The static attributes of layer l's single-token attention (the positions are the step's). */
  private attentionAttrs(l: number) {
    const cfg = this.cfg;
    return { scale: Math.fround(cfg.attnScale), softcap: cfg.attnSoftcap, sliding_window: cfg.slidingWindow[l]! };
  }

  /**
   * Fused layers whose MLP hands int8 activations from the gate|up GEMV to the down GEMV (linear_glu_q8, then
   * linear_q8): act(gate) * up is rounded once, in the gate|up GEMV's epilogue, not by every down_proj workgroup.
   */
  private readonly q8Mlp = new Set<number>();

  /** How many fused layers run their MLP on int8 activations between the two GEMVs. */
  get q8MlpLayers(): number {
    return this.q8Mlp.size;
  }

  /** Layers whose q|k|v and gate|up weights share one buffer (one GEMV each when decoding a single token). */
  private readonly fusedQkv = new Set<number>();
  /**
   * Layers whose v_proj is stored in another format than q_proj and k_proj (llama.cpp's Q4_K_M keeps half the layers'
   * v_proj in Q6_K): q|k share one buffer, and a fused single-token step runs a q|k GEMV and a v GEMV into one q|k|v row.
   */
  private readonly splitQkv = new Set<number>();

  /** How many layers run q|k and v as two GEMVs (splitQkv). */
  get splitQkvLayers(): number {
    return this.splitQkv.size;
  }
  private readonly fusedGateUp = new Set<number>();

  /**
   * Concatenates each layer's q/k/v projection weights (and biases), and gate/up weights, into one buffer by rows,
   * and replaces the separate tensors by views of it: a single-token step runs one GEMV for q|k|v and one for
   * gate|up (fewer dispatches, the input read once); longer steps keep one linear per projection over the views.
   * Skipped for a layer whose parts differ in dtype or width, or whose views would not start at the device's
   * storage offset alignment.
   */
  private fuseProjections(): void {
    const align = this.dev.caps.limits.minStorageBufferOffsetAlignment ?? 256;
    // One submit per layer: the separate buffers are freed as soon as their copies are queued, so loading never
    // holds more than one layer's projections twice.
    let rec = new Recorder(this.dev, { timestamps: false });
    const fuse = (names: string[], fused: string): boolean => {
      const parts = names.map((n) => this.weights.tensors.get(n));
      if (parts.some((t) => !t || t.offset)) return false;
      const ts = parts as Tensor[];
      const rank = ts[0]!.shape.length;
      const same = ts.every((t) => t.dtype === ts[0]!.dtype && t.shape.length === rank && t.shape.slice(1).join() === ts[0]!.shape.slice(1).join());
      if (!same) return false;
      const rowBytes = (t: Tensor) => (t.shape.slice(1).reduce((a, d) => a * d, 1) * (DTYPE_BYTES[t.dtype] ?? NaN));
      const bytes = ts.map((t) => t.shape[0]! * rowBytes(t));
      if (bytes.some((b, i) => !Number.isInteger(b) || (i < bytes.length - 1 && b % align !== 0))) return false;
      const total = bytes.reduce((a, b) => a + b, 0);
      const buffer = storageBuffer(this.dev, total, fused);
      let off = 0;
      ts.forEach((t, i) => {
        rec.copy(t.buffer, 0, buffer, off, Math.ceil(bytes[i]! / 4) * 4);
        rec.destroyAfterSubmit(t.buffer);
        this.weights.tensors.set(names[i]!, { buffer, offset: off, dtype: t.dtype, shape: t.shape });
        off += bytes[i]!;
      });
      this.weights.tensors.set(fused, { buffer, dtype: ts[0]!.dtype, shape: [ts.reduce((a, t) => a + t.shape[0]!, 0), ...ts[0]!.shape.slice(1)] });
      return true;
    };
    const cfg = this.cfg;
    const qRow = cfg.numHeads * cfg.headDim * 4;
    const kvRow = cfg.numKvHeads * cfg.headDim * 4;
    // The single-token GEMV output is viewed as q | k | v and gate | up: those views need aligned offsets too.
    const qkvViews = qRow % align === 0 && (qRow + kvRow) % align === 0;
    const guViews = (cfg.intermediateSize * 4) % align === 0;
    for (let l = 0; l < cfg.numLayers; l++) {
      const p = `model.layers.${l}.`;
      const a = `${p}self_attn.`;
      const hasBias = ['q', 'k', 'v'].map((x) => this.weights.tensors.has(`${a}${x}_proj.bias`));
      const biasOk = () => !hasBias[0] || fuse(['q', 'k', 'v'].map((x) => `${a}${x}_proj.bias`), `${a}qkv_proj.bias`);
      if (qkvViews && hasBias.every((b) => b === hasBias[0])) {
        if (fuse(['q', 'k', 'v'].map((x) => `${a}${x}_proj.weight`), `${a}qkv_proj.weight`)) {
          if (biasOk()) this.fusedQkv.add(l);
        } else if (fuse(['q', 'k'].map((x) => `${a}${x}_proj.weight`), `${a}qk_proj.weight`) && biasOk()) this.splitQkv.add(l);
      }
      if (guViews && fuse([`${p}mlp.gate_proj.weight`, `${p}mlp.up_proj.weight`], `${p}mlp.gate_up_proj.weight`)) this.fusedGateUp.add(l);
      rec.submitUnchecked();
      rec = new Recorder(this.dev, { timestamps: false });
    }
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
      buffer: storageBuffer(this.dev, bytes, name),
      dtype: dt,
      shape: [capacity, cfg.numKvHeads, cfg.headDim],
    });
    const k: Tensor[] = [];
    const v: Tensor[] = [];
    for (let l = 0; l < cfg.numLayers; l++) {
      k.push(mk(`kv.k.${l}`));
      v.push(mk(`kv.v.${l}`));
    }
    return { capacity, dtype: dt, k, v };
  }

  private readonly disposers: (() => void)[] = [];

  /** Run `fn` when the decoder is destroyed (runtime state built on it: sessions, programs). */
  onDestroy(fn: () => void): void {
    this.disposers.push(fn);
  }

  /** Frees what was built on this decoder and its RoPE tables (the weights belong to the caller). */
  destroy(): void {
    for (const fn of this.disposers.splice(0)) fn();
    for (const t of this.ropeTables.values()) {
      t.cos.buffer.destroy();
      t.sin.buffer.destroy();
    }
    this.ropeTables.clear();
    this.dummyU32.buffer.destroy();
    this.oprojSyncBuffer?.buffer.destroy();
    this.dummyF32.buffer.destroy();
    this.dummyU8.buffer.destroy();
  }

  destroyKvCache(kv: KvCache): void {
    for (const t of [...kv.k, ...kv.v]) t.buffer.destroy();
  }

  private linear(s: OpSink, x: StepTensor, w: string, y: StepTensor, biasName?: string): StepTensor {
    const t = this.weights.get(w);
    // one row of a Q8_0 or Q6_K weight: the contract takes the int8 rows GEMV where the device has it (q80_rows, q6k_rows)
    s.op('linear', { x, w: t, y });
    if (biasName && this.weights.tensors.has(biasName)) s.op('bias_add', { data: y, bias: this.weights.get(biasName) });
    return y;
  }

  /** RMS norm of x into out; `residual` is added before the norm or after it (sandwich norm). */
  private norm(s: OpSink, x: StepTensor, weight: string, out: StepTensor, residual?: { t: StepTensor; mode: 'before' | 'after' }): void {
    s.op('rmsnorm', { x, weight: this.weights.get(weight), residual: residual?.t ?? x, out }, { eps: this.cfg.rmsNormEps, residual: residual?.mode ?? 'none' });
  }

  /** sum = a + b and out = rmsnorm(sum) * weight (the residual add that ends a sub-layer and the next norm). */
  private addNorm(s: OpSink, a: StepTensor, b: StepTensor, weight: string, sum: StepTensor, out: StepTensor): void {
    s.op('residual_rmsnorm', { a, b, weight: this.weights.get(weight), sum, out }, { eps: this.cfg.rmsNormEps });
  }

  /**
   * Emit the forward pass of `ids` (u32 [T]) at positions pos.. (a constant or a step variable), appending their
   * keys/values to the cache. Returns the final normed hidden states: all T rows, or the one row `lastRow` ([1, H]).
   */
  emitForward(s: OpSink, ids: StepTensor, kv: KvCache, pos: number | Dyn, lastRow?: number | Dyn): StepTensor {
    const { h, normed } = this.emitHidden(s, ids, kv, pos, lastRow);
    return normed ? h : this.finalNorm(s, h);
  }

  /**
   * The forward pass (as emitForward) and the LM head: the logits of all T rows, or of the one row `lastRow`. Where one
   * row is wanted (a decode step, a prompt's last row) and the last layer has the fused single-token path, the final
   * norm rides in the head GEMV's prologue (headNormFused).
   */
  emitForwardLogits(s: OpSink, ids: StepTensor, kv: KvCache, pos: number | Dyn, lastRow?: number | Dyn, pick?: HeadPick): StepTensor {
    const { h, normed } = this.emitHidden(s, ids, kv, pos, lastRow);
    if (normed || !this.headNormFused || h.shape[0] !== 1) {
      if (pick) throw new RangeError('emitForwardLogits: the greedy pick in the LM head needs the one-row fused head (check headPickWords first)');
      return this.emitLogits(s, normed ? h : this.finalNorm(s, h));
    }
    const logits = s.act('logits', [1, this.cfg.vocabSize]);
    const picked: Record<string, StepTensor> = pick ? { state: pick.state } : {};
    const attrs: Record<string, number> = pick ? { state_base: pick.base, nonfinite_word: pick.word } : {};
    s.op('linear_fused', { x: h, w: this.weights.get(this.headName), gamma: this.weights.get('model.norm.weight'), y: logits, ...picked }, { prologue: 'rmsnorm', eps: this.cfg.rmsNormEps, ...attrs });
    return logits;
  }

  /**
   * The words of a sampler state a one-token step needs for the LM head to pick the greedy token itself
   * (linear_fused's variant q8a_norm_argmax, tunable headArgmax: state[0] the token, state[word] the NaN/Inf count),
   * its area starting at word `base` (past the sample op's words); undefined where the head does not take it (the
   * contract refuses, or the head is not the fused one-row GEMV). The step then needs no sample op.
   */
  headPickWords(base: number, word: number): number | undefined {
    const cfg = this.cfg;
    const head = this.weights.tensors.get(this.headName);
    if (!head || !this.headNormFused) return undefined;
    const tensors = { x: f32([1, cfg.hiddenSize]), w: head, gamma: f32([cfg.hiddenSize]), y: f32([1, cfg.vocabSize]) };
    const attrs = { prologue: 'rmsnorm', eps: cfg.rmsNormEps, state_base: base, nonfinite_word: word };
    // planned first against a state of any size to learn the area's size from the plan
    const plan = opPlan(this.dev, 'linear_fused', { ...tensors, state: { dtype: 'uint32', shape: [0x7fffffff] } }, attrs);
    if (plan?.variant !== 'q8a_norm_argmax') return undefined;
    return base + Number(plan.derived.argmaxWords);
  }

  /**
   * Whether one token's logits come from the head GEMV with the final norm in its prologue (linear_fused, prologue
   * rmsnorm) instead of an rmsnorm dispatch and the head: where the last layer runs fused and the contract takes the
   * head that way. Set once the layers are planned.
   */
  private headNormFused = false;

  private get headName(): string {
    return this.weights.tensors.has('lm_head.weight') ? 'lm_head.weight' : 'model.embed_tokens.weight';
  }

  private findHeadNormFused(): void {
    const cfg = this.cfg;
    const head = this.weights.tensors.get(this.headName);
    this.headNormFused =
      !!head &&
      this.fusedGemv.has(cfg.numLayers - 1) &&
      opAccepts(this.dev, 'linear_fused', { x: f32([1, cfg.hiddenSize]), w: head, gamma: f32([cfg.hiddenSize]), y: f32([1, cfg.vocabSize]) }, { prologue: 'rmsnorm', eps: cfg.rmsNormEps });
  }

  private finalNorm(s: OpSink, h: StepTensor): StepTensor {
    const normed = s.act('final', [h.shape[0]!, this.cfg.hiddenSize]);
    this.norm(s, h, 'model.norm.weight', normed);
    return normed;
  }

  /** The forward pass up to the final norm: the normed rows where the last residual add did the norm, else h. */
  private emitHidden(s: OpSink, ids: StepTensor, kv: KvCache, pos: number | Dyn, lastRow?: number | Dyn): { h: StepTensor; normed: boolean } {
    const cfg = this.cfg;
    const T = ids.shape[0]!;
    if (typeof pos === 'number' && pos + T > kv.capacity) {
      throw new RangeError(`context full: ${pos} + ${T} tokens exceed the KV cache capacity ${kv.capacity} (max positions ${this.maxPositions})`);
    }
    const H = cfg.hiddenSize;
    const D = cfg.headDim;
    const nH = cfg.numHeads;
    const nKV = cfg.numKvHeads;
    const kvRow = nKV * D;
    let normedNext: StepTensor | undefined;
    let h = s.act('embed', [T, H]);
    s.op('embed', { ids, table: this.weights.get('model.embed_tokens.weight'), out: h });
    if (cfg.embedScale !== 1) {
      const scaled = s.act('h', [T, H]);
      s.op('scale', { x: h, out: scaled }, { scale: Math.fround(cfg.embedScale) });
      h = scaled;
    }
    let handoff: Handoff | undefined; // the norm handoff the last fused layer's down GEMV wrote for this layer's q|k|v
    for (let l = 0; l < cfg.numLayers; l++) {
      const p = `model.layers.${l}.`;
      if (T === 1 && !normedNext && this.fusedGemv.has(l)) {
        handoff = this.emitFusedLayer(s, l, h, kv, pos, handoff);
        continue;
      }
      // The layer's normed input: fused into the previous layer's last residual add (pre-norm models), else here.
      let x = normedNext ?? s.act('x', [T, H]);
      if (!normedNext) this.norm(s, h, p + 'input_layernorm.weight', x);
      normedNext = undefined;
      let q: StepTensor;
      let k: StepTensor;
      let v: StepTensor;
      if (T === 1 && this.fusedQkv.has(l)) {
        const qkv = this.linear(s, x, p + 'self_attn.qkv_proj.weight', s.act('qkv', [1, nH * D + 2 * kvRow]), p + 'self_attn.qkv_proj.bias');
        q = { ...qkv, shape: [1, nH * D] };
        k = { ...qkv, offset: nH * D * 4, shape: [1, kvRow] };
        v = { ...qkv, offset: (nH * D + kvRow) * 4, shape: [1, kvRow] };
      } else {
        q = this.linear(s, x, p + 'self_attn.q_proj.weight', s.act('q', [T, nH * D]), p + 'self_attn.q_proj.bias');
        k = this.linear(s, x, p + 'self_attn.k_proj.weight', s.act('k', [T, kvRow]), p + 'self_attn.k_proj.bias');
        v = this.linear(s, x, p + 'self_attn.v_proj.weight', s.act('v', [T, kvRow]), p + 'self_attn.v_proj.bias');
      }
      let q3: StepTensor = { ...q, shape: [T, nH, D] };
      let k3: StepTensor = { ...k, shape: [T, nKV, D] };
      // One token with fused q|k|v: q and k are adjacent heads of one buffer, rotated by one rope dispatch.
      const adjacent = T === 1 && this.fusedQkv.has(l);
      if (cfg.qkNorm) {
        let qn: StepTensor;
        let kn: StepTensor;
        if (adjacent) {
          const qkn = s.act('qkn', [1, nH + nKV, D]);
          qn = { ...qkn, shape: [1, nH, D] };
          kn = { ...qkn, offset: nH * D * 4, shape: [1, nKV, D] };
        } else {
          qn = s.act('qn', [T, nH, D]);
          kn = s.act('kn', [T, nKV, D]);
        }
        this.norm(s, q3, p + 'self_attn.q_norm.weight', qn);
        this.norm(s, k3, p + 'self_attn.k_norm.weight', kn);
        q3 = qn;
        k3 = kn;
      }
      const rope = this.ropeByLayer[l]!;
      const ropeAttrs = { start_pos: pos, interleaved: this.ropeInterleaved };
      if (adjacent) s.op('rope', { x: { ...q3, shape: [1, nH + nKV, D] }, cos: rope.cos, sin: rope.sin }, ropeAttrs);
      else {
        s.op('rope', { x: q3, cos: rope.cos, sin: rope.sin }, ropeAttrs);
        s.op('rope', { x: k3, cos: rope.cos, sin: rope.sin }, ropeAttrs);
      }
      s.op('kv_write', { k: k3, v: { ...v, shape: [T, nKV, D] }, kCache: kv.k[l]!, vCache: kv.v[l]! }, { start_pos: pos });
      const att = s.act('att', [T, nH, D]);
      const attAttrs = { start_pos: pos, kv_len: plus(pos, T), scale: Math.fround(cfg.attnScale), softcap: cfg.attnSoftcap, sliding_window: cfg.slidingWindow[l]! };
      s.op('attention', { q: q3, k: kv.k[l]!, v: kv.v[l]!, kvLen: this.dummyU32, pageTable: this.dummyU32, out: att }, attAttrs);
      if (cfg.attnSinks) {
        // gpt-oss: the sink logit's share of each softmax, taken out of the attention output afterwards
        const { softcap: _, ...sinkAttrs } = attAttrs;
        s.op('sink_scale', { q: q3, k: kv.k[l]!, sinks: this.weights.get(p + 'self_attn.sinks'), out: att }, sinkAttrs);
      }
      const o = this.linear(s, { ...att, shape: [T, nH * D] }, p + 'self_attn.o_proj.weight', s.act('o', [T, H]), p + 'self_attn.o_proj.bias');
      const h2 = s.act('h', [T, H]);
      x = s.act('x', [T, H]);
      if (cfg.sandwichNorm) {
        this.norm(s, o, p + 'post_attention_layernorm.weight', h2, { t: h, mode: 'after' });
        this.norm(s, h2, p + 'pre_feedforward_layernorm.weight', x);
      } else this.addNorm(s, h, o, p + 'post_attention_layernorm.weight', h2, x);
      const d = cfg.moe?.sparse[l] ? this.moe(s, l, x) : this.mlp(s, l, x);
      const h3 = s.act('h', [T, H]);
      if (cfg.sandwichNorm) this.norm(s, d, p + 'post_feedforward_layernorm.weight', h3, { t: h2, mode: 'after' });
      else if (l + 1 < cfg.numLayers || lastRow === undefined) {
        // The residual add and the next norm (layer l + 1's input norm, or the final norm) in one op.
        normedNext = s.act(l + 1 < cfg.numLayers ? 'x' : 'final', [T, H]);
        this.addNorm(s, h2, d, l + 1 < cfg.numLayers ? `model.layers.${l + 1}.input_layernorm.weight` : 'model.norm.weight', h3, normedNext);
      } else s.op('residual', { a: h2, b: d, out: h3 });
      h = h3;
    }
    if (normedNext) return { h: normedNext, normed: true }; // every row was wanted, and the final norm is fused into the last add
    if (lastRow !== undefined) {
      const last = s.act('last', [1, H]);
      s.op('take_rows', { x: h, out: last }, { count: 1, first: lastRow });
      h = last;
    }
    return { h, normed: false };
  }

  /** The dense gated MLP of layer l on x [T, H] -> [T, H]. */
  private mlp(s: OpSink, l: number, x: StepTensor): StepTensor {
    const cfg = this.cfg;
    const p = `model.layers.${l}.`;
    const T = x.shape[0]!;
    const H = cfg.hiddenSize;
    const I = cfg.intermediateSize;
    let g: StepTensor;
    let u: StepTensor;
    if (T === 1 && this.fusedGateUp.has(l)) {
      const gu = this.linear(s, x, p + 'mlp.gate_up_proj.weight', s.act('gu', [1, 2 * I]));
      g = { ...gu, shape: [1, I] };
      u = { ...gu, offset: I * 4, shape: [1, I] };
    } else {
      g = this.linear(s, x, p + 'mlp.gate_proj.weight', s.act('g', [T, I]));
      u = this.linear(s, x, p + 'mlp.up_proj.weight', s.act('u', [T, I]));
    }
    const a = s.act('a', [T, I]);
    s.op('glu', { gate: g, up: u, out: a }, { activation: cfg.activation });
    return this.linear(s, a, p + 'mlp.down_proj.weight', s.act('d', [T, H]));
  }

  /**
   * The mixture-of-experts block of layer l on x [T, H] -> [T, H]: one `moe` contract call (router, the selected
   * experts' up projection and activation, their weighted down projections); experts as moe-weights.ts uploads them.
   */
  private moe(s: OpSink, l: number, x: StepTensor): StepTensor {
    const m = this.cfg.moe!;
    const p = `model.layers.${l}.`;
    const w = (n: string) => this.weights.get(p + n);
    const has = (n: string) => this.weights.tensors.has(p + n);
    const gpt = m.kind === 'gpt_oss';
    // MXFP4 experts (a released gpt-oss folder, or MXFP4 tensors of a GGUF) are uploaded as uint8 blocks + scales
    const mxUp = w('mlp.experts.w_up').dtype === 'uint8';
    const mxDown = w('mlp.experts.w_down').dtype === 'uint8';
    const d = s.act('d', [x.shape[0]!, this.cfg.hiddenSize]);
    s.op(
      'moe',
      {
        x,
        router_w: w(gpt ? 'mlp.router.weight' : 'mlp.gate.weight'),
        router_b: m.routerBias && has('mlp.router.bias') ? w('mlp.router.bias') : this.dummyF32,
        w_up: w('mlp.experts.w_up'),
        w_up_scales: mxUp ? w('mlp.experts.w_up_scales') : this.dummyU8,
        b_up: m.expertBias ? w('mlp.experts.gate_up_proj_bias') : this.dummyF32,
        w_down: w('mlp.experts.w_down'),
        w_down_scales: mxDown ? w('mlp.experts.w_down_scales') : this.dummyU8,
        b_down: m.expertBias ? w('mlp.experts.down_proj_bias') : this.dummyF32,
        y: d,
      },
      { top_k: m.topK, routing: m.routing, norm_topk_prob: m.normTopkProb ? 1 : 0, activation: m.activation, alpha: m.swigluAlpha, limit: m.swigluLimit },
    );
    return d;
  }

  /**
   * One token through layer l with the fused GEMVs (see findFusedGemv): 4 GEMVs, rope_kv (rope of q and k and the
   * KV cache write) and attention: 6 dispatches (plus the bias add and q/k norms where the model has them), 5 where
   * the q|k|v GEMV applies rope and writes the cache itself (linear_rope_kv), 7 where q|k and v are two GEMVs
   * (splitQkv). The residual stream h is updated in place.
   */
  private emitFusedLayer(s: OpSink, l: number, h: StepTensor, kv: KvCache, pos: number | Dyn, handoff: Handoff | undefined): Handoff | undefined {
    const q3 = s.act('q', [1, this.cfg.numHeads, this.cfg.headDim]);
    if (this.ropeFusedQkv.has(l) || this.ropeSplitQkv.has(l)) {
      // q|k|v GEMV, rope and the cache write in one dispatch; or q|k and v (two formats) in two, each with its heads'
      const p = `model.layers.${l}.`;
      const rope = this.ropeByLayer[l]!;
      const weights = this.ropeSplitQkv.has(l) ? ['self_attn.qk_proj.weight', 'self_attn.v_proj.weight'] : ['self_attn.qkv_proj.weight'];
      // their activations: the previous layer's norm handoff, or rmsnorm(h) rounded in their own prologue
      const acts = this.handoffQkv.has(l) && handoff ? handoff : { x: h, gamma: this.weights.get(p + 'input_layernorm.weight') };
      for (const w of weights)
        s.op('linear_rope_kv', { ...acts, w: this.weights.get(p + w), cos: rope.cos, sin: rope.sin, kCache: kv.k[l]!, vCache: kv.v[l]!, q: q3 }, { eps: this.cfg.rmsNormEps, start_pos: pos, interleaved: this.ropeInterleaved });
      return this.emitFusedAttentionMlp(s, l, h, kv, pos, q3, this.ropeFusedQkv.has(l) ? this.chainQkv.get(l) : undefined);
    }
    this.emitQkvRope(s, l, h, kv, pos, q3);
    return this.emitFusedAttentionMlp(s, l, h, kv, pos, q3);
  }

  /** The fused layer's q|k|v GEMV (rmsnorm prologue; or q|k and v where their formats differ), bias and q/k norms where the model has them, then rope_kv. */
  private emitQkvRope(s: OpSink, l: number, h: StepTensor, kv: KvCache, pos: number | Dyn, q3: StepTensor): void {
    const cfg = this.cfg;
    const p = `model.layers.${l}.`;
    const D = cfg.headDim;
    const nH = cfg.numHeads;
    const nKV = cfg.numKvHeads;
    const kvRow = nKV * D;
    const eps = cfg.rmsNormEps;
    const qkv = s.act('qkv', [1, nH * D + 2 * kvRow]);
    const gamma = this.weights.get(p + 'input_layernorm.weight');
    if (this.splitQkv.has(l)) {
      s.op('linear_fused', { x: h, w: this.weights.get(p + 'self_attn.qk_proj.weight'), gamma, y: { ...qkv, shape: [1, nH * D + kvRow] } }, { prologue: 'rmsnorm', eps });
      s.op('linear_fused', { x: h, w: this.weights.get(p + 'self_attn.v_proj.weight'), gamma, y: { ...qkv, offset: (nH * D + kvRow) * 4, shape: [1, kvRow] } }, { prologue: 'rmsnorm', eps });
    } else s.op('linear_fused', { x: h, w: this.weights.get(p + 'self_attn.qkv_proj.weight'), gamma, y: qkv }, { prologue: 'rmsnorm', eps });
    if (this.weights.tensors.has(p + 'self_attn.qkv_proj.bias')) s.op('bias_add', { data: qkv, bias: this.weights.get(p + 'self_attn.qkv_proj.bias') });
    let qk: StepTensor = { ...qkv, shape: [1, nH + nKV, D] };
    if (cfg.qkNorm) {
      const qkn = s.act('qkn', [1, nH + nKV, D]);
      this.norm(s, { ...qkv, shape: [1, nH, D] }, p + 'self_attn.q_norm.weight', { ...qkn, shape: [1, nH, D] });
      this.norm(s, { ...qkv, offset: nH * D * 4, shape: [1, nKV, D] }, p + 'self_attn.k_norm.weight', { ...qkn, offset: nH * D * 4, shape: [1, nKV, D] });
      qk = qkn;
    }
    const rope = this.ropeByLayer[l]!;
    // rope of q and k, rotated keys and the values into the cache: one dispatch
    const v3: StepTensor = { ...qkv, offset: (nH * D + kvRow) * 4, shape: [1, nKV, D] };
    s.op('rope_kv', { qk, v: v3, cos: rope.cos, sin: rope.sin, kCache: kv.k[l]!, vCache: kv.v[l]!, q: q3 }, { start_pos: pos, interleaved: this.ropeInterleaved });
  }

  /**
   * The fused layer from the rotated queries on: attention, o_proj (+ residual), gate|up (post norm), down (+ residual).
   * Returns the norm handoff its down GEMV wrote for the next layer's q|k|v, if it wrote one.
   */
  private emitFusedAttentionMlp(s: OpSink, l: number, h: StepTensor, kv: KvCache, pos: number | Dyn, q3: StepTensor, qkvChain?: { lanes: number; tail: boolean }): Handoff | undefined {
    const cfg = this.cfg;
    const p = `model.layers.${l}.`;
    const D = cfg.headDim;
    const nH = cfg.numHeads;
    const I = cfg.intermediateSize;
    const eps = cfg.rmsNormEps;
    const att = s.act('att', [1, nH, D]);
    const attention = { q: q3, k: kv.k[l]!, v: kv.v[l]!, kvLen: this.dummyU32, pageTable: this.dummyU32, out: att };
    const attrs = { start_pos: pos, kv_len: plus(pos, 1), ...this.attentionAttrs(l) };
    const o = this.weights.get(p + 'self_attn.o_proj.weight');
    const gateUp = this.weights.get(p + 'mlp.gate_up_proj.weight');
    const postNorm = this.weights.get(p + 'post_attention_layernorm.weight');
    const down = this.weights.get(p + 'mlp.down_proj.weight');
    // o_proj's norm handoff to gate|up: h * post-norm rounded in o_proj's epilogue
    const toMlp = this.handoffMlp.has(l) ? this.handoffActs(s) : undefined;
    const oOut: Record<string, StepTensor> = toMlp ? { y: h, ng: postNorm, nq: toMlp.xq, nm: toMlp.xm } : { y: h };
    // q|k|v (the call just before) with attention as one dispatch, in the GEMV's workgroup size (tunable attnChain of
    // linear_rope_kv); then attention does not link with o_proj
    const qkvLinked =
      qkvChain !== undefined && !this.q8Attention.has(l) && !this.prefetchO.has(l) && opAccepts(this.dev, 'attention', this.attentionSpec(kv.capacity), { ...this.attentionAttrs(l), lanes: qkvChain.lanes });
    // attention with o_proj as one dispatch, in o_proj's workgroup size (with gate|up and down too where chainMlp
    // links those: below)
    const lanes = qkvLinked ? undefined : this.chainAttn.get(l);
    const attnLinked = lanes !== undefined && !this.prefetchO.has(l) && opAccepts(this.dev, 'attention', this.attentionSpec(kv.capacity), { ...this.attentionAttrs(l), lanes });
    if (this.q8Attention.has(l)) {
      // the combine pass rounds the output for o_proj
      const q8 = this.q8Acts(s, nH * D);
      s.op('attention', { ...attention, ...q8 }, attrs);
      s.op('linear_q8', { ...q8, w: o, ...oOut }, { accumulate: 1 });
    } else if (toMlp && !qkvLinked && !attnLinked && !this.chainMlp.has(l) && this.attnOproj.has(l) && this.attnOprojOn(l, kv.capacity)) {
      // attention and o_proj (with its norm handoff) as one dispatch
      s.op('attention_oproj', { q: q3, k: kv.k[l]!, v: kv.v[l]!, w: o, y: h, ng: postNorm, nq: toMlp.xq, nm: toMlp.xm, sync: this.oprojSync }, { kv_len: plus(pos, 1), ...this.attnOprojSpec(l, kv.capacity).attrs });
    } else {
      s.op('attention', this.prefetchO.has(l) && this.prefetchesO(l, kv.capacity, o) ? { ...attention, pf: o } : attention, attnLinked ? { ...attrs, lanes: lanes! } : qkvLinked ? { ...attrs, lanes: qkvChain!.lanes } : attrs);
      if (qkvLinked) s.link?.(2, qkvChain!.tail ? { tail: true } : undefined);
      s.op('linear_fused', { x: { ...att, shape: [1, nH * D] }, w: o, ...oOut }, { accumulate: 1 });
    }
    const mlpLinked = this.gluRuns.has(l) && toMlp !== undefined && this.chainMlp.has(l);
    if (attnLinked && !mlpLinked) s.link?.(2);
    if (this.gluRuns.has(l) && toMlp) {
      // act(gate) * up in runs of 16 from gate|up to down
      const runs = this.handoffActs(s, I);
      s.op('linear_glu_q8', { ...toMlp, w: gateUp, nq: runs.xq, nm: runs.xm }, this.gluAttrs);
      s.op('linear_q8', { ...runs, w: down, y: h }, { accumulate: 1 });
      if (mlpLinked) s.link?.(attnLinked ? 4 : 3);
      return undefined;
    }
    if (this.q8Mlp.has(l)) {
      const q8 = this.q8Acts(s, I);
      s.op('linear_glu_q8', { ...(toMlp ?? { x: h, gamma: postNorm }), w: gateUp, ...q8 }, this.gluAttrs);
      // the down GEMV's norm handoff to the next layer's q|k|v: h * its input norm
      const toQkv = this.handoffQkv.has(l + 1) ? this.handoffActs(s) : undefined;
      const dOut: Record<string, StepTensor> = toQkv ? { y: h, ng: this.weights.get(`model.layers.${l + 1}.input_layernorm.weight`), nq: toQkv.xq, nm: toQkv.xm } : { y: h };
      s.op('linear_q8', { ...q8, w: down, ...dOut }, { accumulate: 1 });
      return toQkv;
    }
    const gu = s.act('gu', [1, 2 * I]);
    s.op('linear_fused', { x: h, w: gateUp, gamma: postNorm, y: gu }, { prologue: 'rmsnorm', eps });
    s.op('linear_fused', { x: gu, w: down, y: h }, { prologue: 'glu', activation: cfg.activation, accumulate: 1 });
    return undefined;
  }

  /** A fresh norm handoff of one token's row of n values (the hidden row by default; handoffActivations) in the step. */
  private handoffActs(s: OpSink, n = this.cfg.hiddenSize): Handoff {
    const { xq, xm } = handoffActivations(n);
    return { xq: s.act('hq', xq.shape, xq.dtype), xm: s.act('hm', xm.shape) };
  }

  /** Fresh int8 activations of one token's row of n values (q8Activations) in the step. */
  private q8Acts(s: OpSink, n: number) {
    const { qa, da, rs } = q8Activations(n);
    return { qa: s.act('qa', qa.shape, qa.dtype), da: s.act('da', da.shape), rs: s.act('rs', rs.shape) };
  }

  /** Emit the LM head on normed hidden states [rows, H] -> logits [rows, vocab]. */
  emitLogits(s: OpSink, hidden: StepTensor): StepTensor {
    return this.linear(s, hidden, this.headName, s.act('logits', [hidden.shape[0]!, this.cfg.vocabSize]));
  }
}

/** An f32 tensor of this shape, as opAccepts asks about it. */
function f32(shape: number[]) {
  return { dtype: 'float32', shape };
}

/** A norm handoff in the step: the int8 runs (xq) and their scales, sums and sums of squares (xm). */
interface Handoff {
  xq: StepTensor;
  xm: StepTensor;
}

/**
 * The norm handoff of one token's hidden row of n values, from the GEMV that writes h to the one that reads
 * rmsnorm(h) * gamma (gemv-q8a.wgsl.jinja): the int8 values, 4 a u32, and per run of 16 its scale, int8 sum and sum of
 * h^2 (xm [1, 3 n / 16]).
 */
function handoffActivations(n: number) {
  return { xq: { dtype: 'uint32', shape: [1, n / 4] }, xm: { dtype: 'float32', shape: [1, (3 * n) / 16] } };
}

/** The int8 activations one token's row of n values takes from its producer (linear_glu_q8, attention) to linear_q8:
 * the values, 4 a u32, their block scales (32 values a block) and the sums of every run of 16. */
function q8Activations(n: number) {
  return { qa: { dtype: 'uint32', shape: [1, n / 4] }, da: { dtype: 'float32', shape: [1, n / 32] }, rs: { dtype: 'float32', shape: [1, n / 16] } };
}
