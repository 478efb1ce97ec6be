/**
 * The fused single-token layer's optional variants against the layer without them, on the same random Q4_K weights:
 * - rope and the KV-cache write inside the q|k|v GEMV (linear_rope_kv, tunable ropeKvFuse) vs linear_fused then
 *   rope_kv: both round the q|k|v activations to int8 the same way;
 * - the MLP on int8 activations handed between its GEMVs (linear_glu_q8 then linear_q8, tunable mlpQ8) vs
 *   linear_fused twice: act(gate) * up is rounded to int8 once in the gate|up GEMV instead of in every down_proj
 *   workgroup, the same rounding;
 * - attention's combine pass rounding its output to int8 for o_proj (decode_split_q8, linear_q8; tunable attnQ8) vs
 *   o_proj as linear_fused rounding the f32 rows in every workgroup.
 * - gate|up on the handoff writing act(gate) * up in runs of 16 for the down GEMV (tunable gluRuns) vs blocks of 32:
 *   the logits agree to the int8 rounding's noise;
 * - on llama.cpp's Q4_K_M mix (a layer with v_proj in Q6_K), its q|k and v GEMVs each with rope and the cache write of
 *   its heads (two linear_rope_kv calls, tunable ropeKvSplit) vs linear_fused twice then rope_kv: the same rounding;
 * - attention reading o_proj's weight in workgroups of its own (tunable weightPrefetch): the same logits;
 * - o_proj, gate|up and down linked into one dispatch (tunable mlpChain, devices whose workgroups start in order):
 *   the same logits;
 * - attention and o_proj linked into one dispatch (tunable attnChain), and attention through down (with mlpChain):
 *   the same logits;
 * - q|k|v with rope and attention linked into one dispatch (tunable attnChain of linear_rope_kv), attention in workgroups
 *   of its own or in the GEMV's last workgroups to finish ("tail"): the same logits;
 * - the same handoff in a Q4_K_M model (tunable handoffMixedQkv; off by default there), in every layer ("on") or only
 *   in those whose gate|up writes runs of 16 for a Q4_K down GEMV ("runs");
 * - the norm handoff (o_proj rounding h * post-norm for gate|up, the down GEMV rounding h * the next layer's input
 *   norm for its q|k|v; tunable normHandoff) vs gate|up and q|k|v rounding rmsnorm(h) in their prologues: runs of 16
 *   instead of blocks of 32, so the logits agree to the int8 rounding's noise, not to float rounding.
 * - attention on a short cache and o_proj with its norm handoff as one dispatch (attention_oproj, tunable attnOproj) vs
 *   attention then linear_fused: the same rounding of attention's output, summed over head pairs in another order.
 * cpuMapping is off for every contract involved, so SwiftShader takes the int8 GEMVs too. One-token logits agree to
 * float rounding (the handoff: to 1%), and greedy decoding (which reads every cached key and value an epilogue wrote)
 * gives the same tokens (variants rounding differently, which may part at a near-tie: the logits agree at every position
 * of one model's greedy sequence, run token by token through both). A model takes a variant where opAccepts, under the tunables set when it is built, accepts it; the models
 * then run under the tunables of both.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { decoderConfigFromHF } from '../src/models/config.ts';
import type { LoadedModel } from '../src/models/load.ts';
import { randomModel } from '../src/models/random-weights.ts';
import { computeLogits } from '../src/runtime/logits.ts';
import { maxRelErr } from './helpers/compare.ts';
import { greedyTokens } from './helpers/greedy.ts';
import type { DecodeSession } from '../src/runtime/session.ts';
import { testDevice } from './helpers/device.ts';
import { tunablesSwitch } from './helpers/tunables.ts';
import { chainsCanWait } from '../src/program/chain.ts';

const LLAMA = { architectures: ['LlamaForCausalLM'], hidden_size: 256, intermediate_size: 512, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64, vocab_size: 384, max_position_embeddings: 256, rms_norm_eps: 1e-5 };
const INT8 = { linear_fused: { cpuMapping: 'off' }, linear: { cpuMapping: 'off' } };

/** Why a linked case does not run on this device (undefined where it does: workgroups start in order). */
const linkedChainsNeed = (d: TesseraDevice) =>
  chainsCanWait(d.caps) ? undefined : `linked chains wait on workgroups started in order (chainsCanWait), which ${d.caps.adapterInfo.architecture || d.caps.adapterInfo.vendor} does not promise`;

const VARIANTS = [
  {
    name: 'q|k|v GEMV with rope and the cache write (linear_rope_kv) vs linear_fused + rope_kv',
    tunables: { linear_rope_kv: { cpuMapping: 'off', ropeKvFuse: 'on', normHandoff: 'off' }, linear_glu_q8: { normHandoff: 'off' } },
    without: { linear_rope_kv: { ropeKvFuse: 'off' }, linear_glu_q8: { normHandoff: 'off' } },
    layers: (m: LoadedModel) => m.decoder.ropeFusedLayers,
    what: 'linear_rope_kv',
  },
  {
    name: 'MLP on int8 activations between its GEMVs (linear_glu_q8 + linear_q8) vs linear_fused twice',
    tunables: { linear_glu_q8: { cpuMapping: 'off', mlpQ8: 'on', normHandoff: 'off' }, linear_q8: { cpuMapping: 'off' }, linear_rope_kv: { normHandoff: 'off' } },
    without: { linear_glu_q8: { mlpQ8: 'off' } },
    layers: (m: LoadedModel) => m.decoder.q8MlpLayers,
    what: 'linear_glu_q8 and linear_q8',
  },
  {
    name: 'attention writing int8 activations for o_proj (decode_split_q8 + linear_q8) vs linear_fused',
    tunables: { attention: { cpuMapping: 'off', attnQ8: 'on' }, linear_q8: { cpuMapping: 'off' }, linear_glu_q8: { normHandoff: 'off' }, linear_rope_kv: { normHandoff: 'off' } },
    without: { attention: { attnQ8: 'off' }, linear_glu_q8: { normHandoff: 'off' }, linear_rope_kv: { normHandoff: 'off' } },
    layers: (m: LoadedModel) => m.decoder.q8AttentionLayers,
    what: 'attention with int8 output and linear_q8',
  },
  {
    name: 'norm handoff (o_proj to gate|up, down to the next q|k|v) vs rmsnorm prologues',
    // (gluRuns off: a down GEMV reading runs of 16 writes no handoff for the next q|k|v)
    tunables: { linear_glu_q8: { cpuMapping: 'off', mlpQ8: 'on', normHandoff: 'on', gluRuns: 'off' }, linear_rope_kv: { cpuMapping: 'off', ropeKvFuse: 'on', normHandoff: 'on' }, linear_q8: { cpuMapping: 'off' } },
    without: { linear_glu_q8: { cpuMapping: 'off', mlpQ8: 'on', normHandoff: 'off' }, linear_rope_kv: { cpuMapping: 'off', ropeKvFuse: 'on', normHandoff: 'off' }, linear_q8: { cpuMapping: 'off' } },
    layers: (m: LoadedModel) => m.decoder.normHandoffGemvs,
    what: 'the norm handoff',
    // gate|up in both layers, q|k|v in the second
    count: 3,
    // both round to int8, in runs of 16 or blocks of 32: on SwiftShader each is 1.2-1.7% from the f32 GEMVs' logits
    tol: 4e-2,
  },
  {
    name: 'act(gate) * up in runs of 16 (q8h_glu16_rows + linear_q8 q8h_rows) vs blocks of 32, on the norm handoff',
    tunables: { linear_glu_q8: { cpuMapping: 'off', mlpQ8: 'on', normHandoff: 'on', gluRuns: 'on' }, linear_q8: { cpuMapping: 'off' }, linear_rope_kv: { normHandoff: 'off' } },
    without: { linear_glu_q8: { cpuMapping: 'off', mlpQ8: 'on', normHandoff: 'on', gluRuns: 'off' }, linear_q8: { cpuMapping: 'off' }, linear_rope_kv: { normHandoff: 'off' } },
    layers: (m: LoadedModel) => m.decoder.gluRunsLayers,
    what: 'gate|up writing runs of 16',
    tol: 4e-2,
  },
  {
    name: "Q4_K_M's split q|k|v layer: q|k and v GEMVs with rope and the cache write (linear_rope_kv x2) vs linear_fused x2 + rope_kv",
    tunables: { linear_rope_kv: { cpuMapping: 'off', ropeKvSplit: 'on', normHandoff: 'off' }, linear_glu_q8: { normHandoff: 'off' } },
    without: { linear_rope_kv: { cpuMapping: 'off', ropeKvSplit: 'off' }, linear_glu_q8: { normHandoff: 'off' } },
    layers: (m: LoadedModel) => m.decoder.ropeSplitLayers,
    what: 'linear_rope_kv on q|k and on v',
    // 3 layers, the third with v_proj and down_proj in Q6_K (K = 512: the Q6_K rows GEMVs)
    quant: 'q4k_m' as const,
    hf: { ...LLAMA, hidden_size: 512, intermediate_size: 1024, num_hidden_layers: 3 },
    count: 1,
  },
  {
    name: "attention reading o_proj's weight into the L2 (decode_short_lanes_pf) vs decode_short_lanes",
    tunables: { attention: { cpuMapping: 'off', shortLanes: 'on', weightPrefetch: 'on', prefetchGroups: 6 }, linear_glu_q8: { normHandoff: 'off' }, linear_rope_kv: { normHandoff: 'off' } },
    without: { attention: { cpuMapping: 'off', shortLanes: 'on', weightPrefetch: 'off' }, linear_glu_q8: { normHandoff: 'off' }, linear_rope_kv: { normHandoff: 'off' } },
    layers: (m: LoadedModel) => m.decoder.prefetchLayers,
    what: "the prefetch of o_proj's weight",
    // the same kernels but for workgroups that only read: the same logits to the bit
    tol: 1e-9,
  },
  {
    name: 'o_proj, gate|up and down linked into one dispatch (tunable mlpChain; src/program/chain.ts) vs three dispatches',
    // every part in workgroups of 128 lanes at these shapes (o_proj: 4 teams of 32; gate|up: 4 teams; down: 128)
    tunables: { linear_glu_q8: { cpuMapping: 'off', mlpQ8: 'on', normHandoff: 'on', gluRuns: 'on', glu16Teams: 4, mlpChain: 'on' }, linear_q8: { cpuMapping: 'off', gemvWorkgroup: 128 }, linear_rope_kv: { normHandoff: 'off' } },
    without: { linear_glu_q8: { cpuMapping: 'off', mlpQ8: 'on', normHandoff: 'on', gluRuns: 'on', glu16Teams: 4, mlpChain: 'off' }, linear_q8: { cpuMapping: 'off', gemvWorkgroup: 128 }, linear_rope_kv: { normHandoff: 'off' } },
    layers: (m: LoadedModel) => m.decoder.chainMlpLayers,
    what: 'the linked MLP',
    // the decode programs link each layer's three calls into one dispatch: 2 dispatches saved a layer
    linkedSaved: 4,
    needs: linkedChainsNeed,
    // the same kernels in one dispatch: the same logits to the bit
    tol: 1e-9,
  },
  {
    name: 'attention and o_proj linked into one dispatch (tunable attnChain) vs two dispatches',
    // attention is asked for o_proj's workgroup size (128 lanes at these shapes: 4 teams of 32)
    tunables: { linear_fused: { cpuMapping: 'off', attnChain: 'on' }, attention: { cpuMapping: 'off', shortLanes: 'on' }, linear_glu_q8: { normHandoff: 'off' }, linear_rope_kv: { normHandoff: 'off' } },
    without: { linear_fused: { cpuMapping: 'off', attnChain: 'off' }, attention: { cpuMapping: 'off', shortLanes: 'on' }, linear_glu_q8: { normHandoff: 'off' }, linear_rope_kv: { normHandoff: 'off' } },
    layers: (m: LoadedModel) => m.decoder.chainAttnLayers,
    what: 'the linked attention and o_proj',
    linkedSaved: 2,
    needs: linkedChainsNeed,
    tol: 1e-9,
  },
  // attention is asked for the q|k|v GEMV's workgroup size (128 lanes at these shapes); it loads the cache before it
  // waits, the new position's rows after; "tail": in the GEMV's last workgroups to finish
  ...(['on', 'tail'] as const).map((mode) => ({
    name: `q|k|v with rope and attention linked into one dispatch (tunable attnChain of linear_rope_kv: ${mode}) vs two dispatches`,
    tunables: { linear_rope_kv: { cpuMapping: 'off', normHandoff: 'off', attnChain: mode }, attention: { cpuMapping: 'off', shortLanes: 'on' }, linear_glu_q8: { normHandoff: 'off' } },
    without: { linear_rope_kv: { cpuMapping: 'off', normHandoff: 'off', attnChain: 'off' }, attention: { cpuMapping: 'off', shortLanes: 'on' }, linear_glu_q8: { normHandoff: 'off' } },
    layers: (m: LoadedModel) => m.decoder.chainQkvLayers,
    what: `the linked q|k|v and attention (${mode})`,
    linkedSaved: 2,
    needs: linkedChainsNeed,
    tol: 1e-9,
  })),
  {
    name: 'attention, o_proj, gate|up and down linked into one dispatch (attnChain and mlpChain) vs four dispatches',
    // every part in workgroups of 128 lanes (o_proj: 4 teams of 32; gate|up: 4 teams; down: 128; attention: asked)
    tunables: { linear_fused: { cpuMapping: 'off', attnChain: 'on' }, attention: { cpuMapping: 'off', shortLanes: 'on' }, linear_glu_q8: { cpuMapping: 'off', mlpQ8: 'on', normHandoff: 'on', gluRuns: 'on', glu16Teams: 4, mlpChain: 'on' }, linear_q8: { cpuMapping: 'off', gemvWorkgroup: 128 }, linear_rope_kv: { normHandoff: 'off' } },
    without: { linear_fused: { cpuMapping: 'off', attnChain: 'off' }, attention: { cpuMapping: 'off', shortLanes: 'on' }, linear_glu_q8: { cpuMapping: 'off', mlpQ8: 'on', normHandoff: 'on', gluRuns: 'on', glu16Teams: 4, mlpChain: 'off' }, linear_q8: { cpuMapping: 'off', gemvWorkgroup: 128 }, linear_rope_kv: { normHandoff: 'off' } },
    layers: (m: LoadedModel) => m.decoder.chainAttnLayers + m.decoder.chainMlpLayers,
    what: 'the linked attention and MLP',
    count: 4,
    linkedSaved: 6,
    needs: linkedChainsNeed,
    tol: 1e-9,
  },
  {
    name: "the norm handoff in a Q4_K_M model (mixed q|k|v formats: tunable handoffMixedQkv) vs rmsnorm prologues",
    tunables: { linear_glu_q8: { cpuMapping: 'off', mlpQ8: 'on', normHandoff: 'on', handoffMixedQkv: 'on' }, linear_q8: { cpuMapping: 'off' }, linear_rope_kv: { cpuMapping: 'off', normHandoff: 'off' } },
    without: { linear_glu_q8: { cpuMapping: 'off', mlpQ8: 'on', normHandoff: 'on', handoffMixedQkv: 'off' }, linear_q8: { cpuMapping: 'off' }, linear_rope_kv: { cpuMapping: 'off', normHandoff: 'off' } },
    layers: (m: LoadedModel) => m.decoder.normHandoffGemvs,
    what: 'the norm handoff on mixed q|k|v',
    quant: 'q4k_m' as const,
    hf: { ...LLAMA, hidden_size: 512, intermediate_size: 1024, num_hidden_layers: 3 },
    count: 3,
    tol: 4e-2,
  },
  {
    // layer 2 of 3 keeps its down_proj in Q6_K (q4kmKeepsQ6K): only layers 0 and 1 write runs of 16 for a Q4_K down GEMV
    name: 'the norm handoff in a Q4_K_M model only where gate|up writes runs of 16 (handoffMixedQkv runs) vs rmsnorm prologues',
    tunables: { linear_glu_q8: { cpuMapping: 'off', mlpQ8: 'on', normHandoff: 'on', gluRuns: 'on', handoffMixedQkv: 'runs' }, linear_q8: { cpuMapping: 'off' }, linear_rope_kv: { cpuMapping: 'off', normHandoff: 'off' } },
    without: { linear_glu_q8: { cpuMapping: 'off', mlpQ8: 'on', normHandoff: 'on', gluRuns: 'on', handoffMixedQkv: 'off' }, linear_q8: { cpuMapping: 'off' }, linear_rope_kv: { cpuMapping: 'off', normHandoff: 'off' } },
    layers: (m: LoadedModel) => m.decoder.normHandoffGemvs + m.decoder.gluRunsLayers,
    what: 'the norm handoff with runs of 16 on mixed q|k|v',
    quant: 'q4k_m' as const,
    hf: { ...LLAMA, hidden_size: 512, intermediate_size: 1024, num_hidden_layers: 3 },
    count: 4,
    tol: 4e-2,
  },
  {
    // head_dim 128 and query heads in pairs sharing a kv head (attention_oproj's shapes); the cache of 64 positions is short
    name: 'attention and o_proj with its norm handoff as one dispatch (attention_oproj) vs attention then linear_fused',
    tunables: { attention_oproj: { cpuMapping: 'off', attnOproj: 'on' }, attention: { cpuMapping: 'off' }, linear_glu_q8: { cpuMapping: 'off' }, linear_q8: { cpuMapping: 'off' }, linear_rope_kv: { cpuMapping: 'off' } },
    without: { attention_oproj: { cpuMapping: 'off', attnOproj: 'off' }, attention: { cpuMapping: 'off' }, linear_glu_q8: { cpuMapping: 'off' }, linear_q8: { cpuMapping: 'off' }, linear_rope_kv: { cpuMapping: 'off' } },
    layers: (m: LoadedModel) => m.decoder.attnOprojLayers,
    what: 'attention_oproj',
    hf: { ...LLAMA, num_attention_heads: 2, num_key_value_heads: 1, head_dim: 128 },
    tol: 1e-2,
  },
];

let dev: TesseraDevice;
const tun = tunablesSwitch();

function model(label: string, tunables: object, quant: 'q4k' | 'q4k_m' = 'q4k', hf: Record<string, unknown> = LLAMA): LoadedModel {
  tun.set(tunables);
  return randomModel(dev, decoderConfigFromHF(hf, 'test config'), quant, { seed: 7, randomNorms: true, f32Embedding: true, decoder: { maxPositions: 64 }, label });
}

beforeAll(async () => {
  dev = await testDevice();
});
afterAll(tun.restore);

describe.each(VARIANTS)('Llama: $name', ({ tunables, without, layers, what, ...v }) => {
  const count = 'count' in v ? v.count! : 2;
  const tol = 'tol' in v ? v.tol! : 1e-4;
  const quant = 'quant' in v ? v.quant! : 'q4k';
  const hf = 'hf' in v ? v.hf! : LLAMA;
  const numLayers = hf.num_hidden_layers;
  let on: LoadedModel;
  let off: LoadedModel;
  const both = { ...INT8, ...tunables };
  beforeAll(() => {
    // the variant's tunables decide which layers take it when the model is built; both models run under `both`
    off = model(`random ${quant} (without ${what})`, { ...INT8, ...without }, quant, hf);
    on = model(`random ${quant} (${what})`, both, quant, hf);
  });

  it(`every fused layer takes ${what} when its tunable is on, none otherwise`, (ctx) => {
    if (on.decoder.fusedGemvLayers === 0) ctx.skip(`no fused layers on this device (${dev.caps.adapterInfo.description}): linear_fused needs subgroups; the GPU lane runs it`);
    const lacks = 'needs' in v ? v.needs!(dev) : undefined;
    if (lacks) ctx.skip(`${lacks}; the GPU lane runs it`);
    expect(layers(on)).toBe(count);
    expect(layers(off)).toBe(0);
    expect(off.decoder.fusedGemvLayers).toBe(numLayers);
  });

  it('one-token logits agree and greedy decoding gives the same tokens', async (ctx) => {
    if (layers(on) === 0) ctx.skip(`${what} is not accepted on this device (subgroups needed); the GPU lane runs it`);
    tun.set(both);
    for (const id of [3, 100, 383]) {
      const a = (await computeLogits(on, [id])).last;
      const b = (await computeLogits(off, [id])).last;
      expect(maxRelErr(a, b), `token ${id}`).toBeLessThan(tol);
    }
    let session: DecodeSession | undefined;
    const a = await greedyTokens(on, [5, 17, 42], 12, (x) => (session = x));
    expect(a).toHaveLength(12);
    if ('linkedSaved' in v) {
      // the links were made (a refused link runs the same kernels apart and would pass the comparisons above)
      const stats = session!.programs().map((p) => p.stats);
      expect(Math.max(...stats.map((st) => st.linkedDispatchesSaved)), JSON.stringify(stats.map((st) => st.linkRefused))).toBe(v.linkedSaved);
    }
    if (tol < 1e-2) {
      expect(a).toEqual(await greedyTokens(off, [5, 17, 42], 12));
      return;
    }
    // variants that round differently (the handoff's runs of 16 against blocks of 32) may part at a near-tie, so the
    // two models run token by token over the same sequence, the prompt and `on`'s greedy tokens, each over the cache
    // its own epilogues wrote: at every position the logits agree to the tolerance, and `on`'s tokens are its argmax
    const prompt = [5, 17, 42];
    const seq = [...prompt, ...a];
    const V = on.config.vocabSize;
    const la = (await computeLogits(on, seq, { tokenByToken: true })).all;
    const lb = (await computeLogits(off, seq, { tokenByToken: true })).all;
    for (let t = 0; t < a.length; t++) {
      const p = prompt.length - 1 + t; // the position whose logits chose a[t]
      const pa = la.subarray(p * V, (p + 1) * V);
      expect(maxRelErr(pa, lb.subarray(p * V, (p + 1) * V)), `position ${p}`).toBeLessThan(tol);
      expect(pa.indexOf(Math.max(...pa)), `position ${p}`).toBe(a[t]);
    }
  });
});
