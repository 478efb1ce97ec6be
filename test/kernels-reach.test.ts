/**
 * `tessera kernels reach`: the contracts evaluated over the shipped device profiles x model configs x shapes, the
 * model's requests taken from the decoder itself (a planning device, no GPU), compared with the registry's copied
 * reachability records; and the support document regenerated from it.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contractKernels, reachReport, type ReachReport } from '../src/registry/reach.ts';
import { defaultRegistry } from '../src/node/registry.ts';
import type { Registry } from '../src/registry/types.ts';
import { kernelsReach, loadReachDevice, loadReachModel, reachContracts } from '../src/cli/kernels.ts';
import { evaluateReach, type ReachEvaluation } from '../src/runtime/reach-eval.ts';
import { planningDecoder, planningDevice, plannedWeights, stepRequests, REACH_SAMPLING, type ReachQuant } from '../src/runtime/op-requests.ts';
import { loadModel } from '../src/models/load.ts';
import { opPlan } from '../src/ops/runner.ts';
import { testDevice } from './helpers/device.ts';
import { moeFromDense } from './helpers/moe-fixtures.ts';
import { capsFromJson } from '../src/gpu/caps.ts';
import { decoderConfigFromHF } from '../src/models/config.ts';
import { writeSupportDocument } from '../src/node/support-doc.ts';
import { parseReachCells, parseSupportDoc, SUPPORT_DOC } from '../src/selftest/support.ts';
import { tessera } from './helpers/cli.ts';

const registry = defaultRegistry();
let report: ReachReport;
const dir = mkdtempSync(join(tmpdir(), 'tessera-reach-'));

beforeAll(() => {
  report = kernelsReach();
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const selections = (r: ReachReport, contractVariant: string) => r.contractVariants.find((c) => c.id === contractVariant);
const variant = (r: ReachReport, id: string) => r.variants.find((v) => v.id === id)!;

describe('kernels reach over the shipped profiles and model configs', () => {
  it('covers every profile (marked measured or modelled), every registry variant and every contract', () => {
    expect(report.devices.map((d) => [d.name, d.provenance])).toEqual([
      ['apple-silicon', 'modelled'],
      ['integrated-small', 'modelled'],
      ['nvidia-h200', 'measured'],
      ['swiftshader', 'measured'],
    ]);
    expect(report.variants).toHaveLength(302);
    expect(report.shapes).toEqual(expect.arrayContaining(['decode ctx=1k', 'decode ctx=32k', 'prefill T=1 ctx=1k', 'prefill T=16 ctx=1k', 'prefill T=512 ctx=32k', 'prefill T=4096 ctx=32k']));
    expect(report.models.map((m) => m.name)).toEqual(expect.arrayContaining(['default', 'Llama-3.2-1B', 'Llama-3.1-8B', 'Qwen3-0.6B', 'gpt-oss-20b']));
    const { ops, moe } = reachContracts();
    for (const { name, contract } of [...ops, ...moe]) for (const id of contractKernels(contract).keys()) expect(report.contractVariants.map((c) => c.id)).toContain(`${name}.${id}`);
    for (const d of report.summary.perDevice) expect(d.registryVariants, d.device).toBeGreaterThan(10);
  });

  it('evaluates the MoE configs: the decoder\'s moe and sink_scale calls, and the QMoE contracts for the experts', () => {
    expect(selections(report, 'moe.float')!.models).toContain('Qwen3-30B-A3B');
    expect(selections(report, 'moe.mxfp4')!.models).toEqual(['gpt-oss-20b']); // released MXFP4 experts, read as stored
    expect(selections(report, 'moe.float')!.devices).toHaveLength(4);
    expect(selections(report, 'sink_scale.f32kv')!.models).toEqual(['gpt-oss-20b']);
    expect(selections(report, 'qmoe.quant_gemv_routed')!.models.sort()).toEqual(['Qwen3-30B-A3B', 'gpt-oss-20b']);
    expect(selections(report, 'qmoe.v2.quant_grouped_sgmat_f16_routed')!.devices).toEqual(['nvidia-h200']);
    // gpt-oss's f32 embedding and LM head (201088 x 2880) do not fit the H200's 2 GiB storage bindings
    const big = report.unsupported.filter((u) => u.device === 'nvidia-h200' && u.model === 'gpt-oss-20b');
    expect(big.map((u) => `${u.quant} ${u.op}`).sort()).toEqual(['f32 embed', 'f32 linear']);
    expect(big[0]!.reason).toMatch(/exceeds device\.limits\.maxStorageBufferBindingSize = 2147483644/);
  });

  it('finds the Q4_K decode GEMVs on the H200 profile', () => {
    // single-token steps of Q4_K models: the fused GEMVs on int8 activations rounded inside each workgroup (with the
    // rmsnorm prologue; residual epilogue; o_proj in rows mode where 4 teams of lanes fit a workgroup) and the LM head's;
    // o_proj hands gate|up its normed input (norm handoff), gate|up hands down act(gate) * up in runs of 16 (gluRuns)
    expect(selections(report, 'linear_fused.q8a_norm_fused')!.devices).toContain('nvidia-h200');
    expect(selections(report, 'linear_fused.q8a_plain_rows')!.devices).toContain('nvidia-h200');
    expect(selections(report, 'linear_fused.q8a_plain_rows_next')!.devices).toContain('nvidia-h200');
    expect(selections(report, 'linear_glu_q8.q8h_glu16_rows')!.devices).toContain('nvidia-h200');
    expect(selections(report, 'linear_q8.q8h_rows')!.devices).toContain('nvidia-h200');
    expect(selections(report, 'linear.q4k_gemv_q8a_fused')!.devices).toContain('nvidia-h200');
    expect(selections(report, 'linear.q4k_sgmat')!.devices).toEqual(['nvidia-h200']); // subgroup matrices: the H200 only
    // one row times a Q4_K weight through linear: in rows mode from 4096 to 65535 rows at K >= 4096 (gemvQ4Rows), fused
    // below; a vocabulary-sized head takes a quant pass first (gemvFuseQuant auto: 84.5 vs 110.8 us at 128256x4096 on the H200)
    const h200 = planningDevice(capsFromJson(JSON.parse(readFileSync('spec/device-profiles/nvidia-h200.json', 'utf8'))));
    const linearPlan = (N: number) => opPlan(h200, 'linear', { x: { dtype: 'float32', shape: [1, 4096] }, w: { dtype: 'q4_k', shape: [N, 4096] }, y: { dtype: 'float32', shape: [1, N] } }, {});
    expect(linearPlan(14336)?.variant).toBe('q4k_rows');
    expect(opPlan(h200, 'linear', { x: { dtype: 'float32', shape: [1, 2048] }, w: { dtype: 'q4_k', shape: [8192, 2048] }, y: { dtype: 'float32', shape: [1, 8192] } }, {})?.variant).toBe('q4k_gemv_q8a_fused');
    const head = linearPlan(128256)!;
    expect([head.variant, head.passes.map((p) => p.id), head.passes[1]!.dispatch]).toEqual(['q4k_gemv_q8a', ['quant', 'matmul'], [32064, 1, 1]]);
    // Q8_0 and Q6_K at M = 1: the int8 rows GEMV the decoder uses (H200, 46f8889: 134.1 / 145.3 us at 128256x4096
    // against gemv-subgroup's 232.0 / 248.9): Q8_0 16 rows a workgroup in 2 teams of 128 lanes at K = 4096, Q6_K 32 rows
    // in one team
    for (const [fmt, want, wg, groups] of [['q8_0', 'q80_rows', 256, 8016], ['q6_k', 'q6k_rows', 128, 4008]] as const) {
      const plan = opPlan(h200, 'linear', { x: { dtype: 'float32', shape: [1, 4096] }, w: { dtype: fmt, shape: [128256, 4096] }, y: { dtype: 'float32', shape: [1, 128256] } }, {})!;
      expect([plan.variant, plan.derived.rowsWg, plan.passes[0]!.dispatch], fmt).toEqual([want, wg, [groups, 1, 1]]);
    }
    const q4 = variant(report, 'matmul.q4_fused_batched');
    expect(q4.devices).toContain('nvidia-h200');
    expect(q4.selectedBy.some((s) => s.device === 'nvidia-h200' && s.model === 'Llama-3.1-8B' && s.quant === 'q4k')).toBe(true);
  });

  it('finds the CPU mappings and the Q4_K GEMV kernel on SwiftShader', () => {
    for (const cv of ['linear.f32_rows_cpu', 'rmsnorm.rows_cpu', 'attention.rows_cpu', 'residual_rmsnorm.two_pass_cpu']) {
      expect(selections(report, cv)!.devices, cv).toEqual(['swiftshader']);
    }
    const gemv = variant(report, 'matmul.q4_fused_gemv');
    expect(gemv.devices).toEqual(['swiftshader']);
    expect(gemv.selectedBy.find((s) => s.model === 'default' && s.quant === 'q4k')!.shapes).toContain('decode ctx=32k');
  });

  it('a profile without shader-f16 never selects an f16 kernel, contract variant or tensor', () => {
    const ev = evaluateReach(['integrated-small', 'swiftshader'].map((p) => loadReachDevice(`spec/device-profiles/${p}.json`)), [loadReachModel('test/fixtures/hf/qwen3/config.json'), loadReachModel('models/default/config.json')], {
      moeContracts: reachContracts().moe,
    });
    expect(ev.selections.length).toBeGreaterThan(100);
    const { ops } = reachContracts();
    const needsF16 = new Set(ops.flatMap(({ name, contract }) => contract.variants.filter((v) => v.requires?.features?.includes('shader-f16')).map((v) => `${name}.${v.id}`)));
    for (const s of ev.selections) {
      const where = `${s.device} ${s.model} ${s.quant} ${s.shape} ${s.contractVariant}`;
      expect(s.dtypes, where).not.toContain('float16');
      expect(needsF16.has(s.contractVariant), where).toBe(false);
      for (const k of s.kernels) {
        const dot = k.indexOf('.');
        expect(registry.operations.get(k.slice(0, dot))!.variants.get(k.slice(dot + 1))!.requires, `${where}: ${k}`).not.toContain('shader-f16');
      }
    }
    // the same models on the H200 do get f16 tensors (the check above is not vacuous)
    const h200 = evaluateReach([loadReachDevice('spec/device-profiles/nvidia-h200.json')], [loadReachModel('models/default/config.json')], { quants: ['q4k'] });
    expect(h200.selections.some((s) => s.dtypes.includes('float16'))).toBe(true);
  });

  it('the requests follow the decoder: fused single-token layers where the contracts accept them', () => {
    const caps = capsFromJson(JSON.parse(readFileSync('spec/device-profiles/nvidia-h200.json', 'utf8')));
    const cfg = decoderConfigFromHF(JSON.parse(readFileSync('models/default/config.json', 'utf8')));
    const dec = planningDecoder(caps, cfg, 'q4k', 1024);
    expect(dec.fusedGemvLayers).toBe(cfg.numLayers);
    const decode = stepRequests(dec, { kind: 'decode', tokens: 1, context: 1024 }, REACH_SAMPLING[1]!);
    const ops = decode.map((r) => r.request.op);
    // rope and the cache write in the q|k|v GEMV (linear_rope_kv, on by default); the shipped model's down_proj rows
    // (576) are no whole Q4_K blocks, so its MLP stays linear_fused twice
    expect(dec.ropeFusedLayers).toBe(cfg.numLayers);
    expect(dec.q8MlpLayers).toBe(0);
    expect(ops).toEqual(expect.arrayContaining(['embed', 'linear_fused', 'linear_rope_kv', 'attention', 'count_nonfinite', 'rep_penalty', 'sample']));
    expect(ops).not.toContain('rope_kv');
    // the final norm rides in the head GEMV's prologue (one more linear_fused a step, no rmsnorm, no linear)
    expect(ops).not.toContain('rmsnorm');
    expect(ops).not.toContain('linear');
    // greedy decoding counts the NaN/Inf logits in its argmax (no count_nonfinite); sampling with a penalty does not
    const greedy = stepRequests(dec, { kind: 'decode', tokens: 1, context: 1024 }, REACH_SAMPLING[0]!).map((r) => r.request.op);
    expect(greedy).toContain('sample');
    expect(greedy).not.toContain('count_nonfinite');
    const calls = (op: string) => decode.filter((r) => r.request.op === op).reduce((n, r) => n + r.calls, 0);
    // two decode steps: the whole cache's, and the one on its first 256 rows (attention in one pass: decode_short)
    expect(dec.decodePrefix(1024)).toBe(256);
    expect(decode.filter((r) => r.request.op === 'attention').map((r) => r.request.tensors.k!.shape[0]).sort()).toEqual([1024, 256]);
    expect(calls('linear_fused')).toBe(2 * (3 * cfg.numLayers - dec.q8AttentionLayers + 1));
    expect(calls('linear_rope_kv')).toBe(2 * cfg.numLayers);
    const prefill = stepRequests(dec, { kind: 'prefill', tokens: 16, context: 1024 }, REACH_SAMPLING[0]!);
    // the prompt's layers run unfused; its last row's head takes the final norm as a decode step's does
    expect(prefill.filter((r) => r.request.op === 'linear_fused').map((r) => [r.request.tensors.w!.shape[0], r.calls])).toEqual([[cfg.vocabSize, 1]]);
    expect(prefill.find((r) => r.request.op === 'attention')!.request.tensors.k).toEqual({ dtype: 'float16', shape: [1024, cfg.numKvHeads, cfg.headDim] });
  });
});

describe('the planned weights are what the loader uploads', () => {
  // plannedWeights mirrors uploadWeights' dtype choice without reading a byte; a loader change that it misses fails here
  it('every tensor of models/default, the fixtures and a Qwen3-MoE, for each weight format, on this device', async () => {
    const dev = await testDevice();
    const moe = await moeFromDense(false);
    const FUSED = /self_attn\.qkv_proj\.|mlp\.gate_up_proj\.weight$/;
    const quants: ReachQuant[] = dev.caps.features.has('shader-f16') ? ['f32', 'f16', 'q4k', 'q8_0'] : ['f32', 'q4k', 'q8_0'];
    try {
      for (const path of ['models/default', 'test/fixtures/hf/llama', 'test/fixtures/hf/qwen3', 'test/fixtures/hf/gemma3', moe]) {
        for (const quant of quants) {
          const model = await loadModel(dev, path, { quant: quant as 'f32', maxPositions: 64 });
          try {
            const planned = plannedWeights(planningDevice(dev.caps), model.config, quant);
            const got = [...model.weights.tensors].filter(([n]) => !FUSED.test(n)).map(([n, t]) => [n, t.dtype, t.shape.join('x')].join(' ')).sort();
            const want = [...planned.tensors].map(([n, t]) => [n, t.dtype, t.shape.join('x')].join(' ')).sort();
            expect(want, `${path} ${quant}`).toEqual(got);
          } finally {
            model.destroy();
          }
        }
      }
    } finally {
      rmSync(moe, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('disagreements with the registry reachability records', () => {
  let ev: ReachEvaluation;
  beforeAll(() => {
    ev = evaluateReach([loadReachDevice('spec/device-profiles/swiftshader.json')], [loadReachModel('models/default/config.json')], { quants: ['f32', 'q4k'] });
  });

  function withStatus(edits: Record<string, string>): Registry {
    const reg = defaultRegistry();
    const ops = new Map([...reg.operations].map(([name, op]) => [name, { ...op, variants: new Map([...op.variants].map(([k, v]) => [k, edits[v.id] ? { ...v, reachability: { ...v.reachability, status: edits[v.id]! } } : v])) }]));
    return { ...reg, operations: ops } as Registry;
  }

  it('are listed both ways', () => {
    const { ops } = reachContracts();
    const r = reachReport(ev, registry, ops);
    expect(r.summary.disagreements.evaluationOnly).toBe(r.disagreements.evaluationOnly.length);
    expect(r.summary.disagreements.registryOnly).toBe(r.disagreements.registryOnly.length);
    for (const d of r.disagreements.evaluationOnly) expect(['selectable', 'unused']).toContain(d.registryStatus);
    for (const d of r.disagreements.registryOnly) expect(['pinned', 'model-selectable']).toContain(d.registryStatus);
    expect(r.disagreements.registryOnly.length).toBeGreaterThan(0);
  });

  it('a synthetic record that claims "unused" for a selected variant is reported, and so is a "pinned" one nothing selects', () => {
    const { ops } = reachContracts();
    expect(variant(reachReport(ev, registry, ops), 'matmul.q4_fused_gemv').selected).toBe(true);
    const reg = withStatus({ 'matmul.q4_fused_gemv': 'unused', 'softmax.default': 'pinned' });
    const r = reachReport(ev, reg, ops);
    const e = r.disagreements.evaluationOnly.find((d) => d.variant === 'matmul.q4_fused_gemv')!;
    expect(e.registryStatus).toBe('unused');
    expect(e.detail).toMatch(/registry says unused; selected through linear\.q4k_gemv on swiftshader by default/);
    const o = r.disagreements.registryOnly.find((d) => d.variant === 'softmax.default')!;
    expect(o.detail).toMatch(/registry says pinned .*named by softmax\.rows, but no evaluated device x model x shape selects it/);
    expect(reachReport(ev, registry, ops).disagreements.evaluationOnly.map((d) => d.variant)).not.toContain('matmul.q4_fused_gemv');
  });
});

describe('tessera kernels reach (CLI)', () => {
  const base = ['kernels', 'reach', '--device-profile', 'spec/device-profiles/swiftshader.json', '--device-profile', 'spec/device-profiles/integrated-small.json', '--model-config', 'test/fixtures/hf/llama/config.json'];

  it('prints a table', async () => {
    const r = await tessera(...base);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^kernels reach: 2 device profiles x 1 model configs x 5 weight formats x 9 shapes/);
    expect(r.stdout).toMatch(/device\s+provenance\s+requests\s+unsupported\s+registry variants\s+contract variants/);
    expect(r.stdout).toMatch(/\nswiftshader\s+measured\s+\d+\s+\d+\s+\d+\s+\d+/);
    expect(r.stdout).toMatch(/\nintegrated-small\s+modelled\s+\d+/);
    expect(r.stdout).toMatch(/registry variants selected: \d+ of 302/);
    expect(r.stdout).toMatch(/\n {2}matmul\.f32\s+pinned\s+swiftshader, integrated-small\s+llama/);
    expect(r.stdout).toMatch(/recorded as reached by a model, but not selected \(\d+\):/);
  });

  it('prints valid JSON with --json', async () => {
    const r = await tessera(...base, '--json');
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout) as ReachReport;
    expect(j.devices.map((d) => d.name)).toEqual(['swiftshader', 'integrated-small']);
    expect(j.models).toEqual([{ name: 'llama', architecture: 'LlamaForCausalLM', file: 'test/fixtures/hf/llama/config.json', moe: false }]);
    expect(j.variants).toHaveLength(302);
    expect(j.summary.perDevice.map((d) => d.device)).toEqual(['swiftshader', 'integrated-small']);
    expect(j.summary.disagreements.registryOnly).toBe(j.disagreements.registryOnly.length);
    expect(j.variants.find((v) => v.id === 'matmul.f32')!.devices.sort()).toEqual(['integrated-small', 'swiftshader']);
  });

  it('names the file of a missing or malformed profile or config', async () => {
    const badJson = join(dir, 'bad-profile.json');
    writeFileSync(badJson, '{ "features": [');
    const badLimits = join(dir, 'bad-limits.json');
    writeFileSync(badLimits, JSON.stringify({ features: [], limits: { maxBufferSize: 'big' }, adapterInfo: {} }));
    const badConfig = join(dir, 'config.json');
    writeFileSync(badConfig, JSON.stringify({ hidden_size: 64 }));
    const cases: [string[], RegExp][] = [
      [['--device-profile', 'spec/device-profiles/nope.json'], /error: --device-profile spec\/device-profiles\/nope\.json: cannot read the file \(ENOENT\)/],
      [['--device-profile', badJson], new RegExp(`error: --device-profile ${badJson}: not valid JSON`)],
      [['--device-profile', badLimits], new RegExp(`error: --device-profile ${badLimits}: limits\\.maxBufferSize must be a number`)],
      [['--model-config', 'models/none/config.json'], /error: --model-config models\/none\/config\.json: cannot read the file \(ENOENT\)/],
      [['--model-config', badConfig], new RegExp(`error: --model-config ${badConfig}: .*architectures.*required field is missing`)],
    ];
    for (const [args, want] of cases) {
      const r = await tessera('kernels', 'reach', ...args);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr, args.join(' ')).toMatch(want);
    }
  });
});

describe('docs/kernel-support.md from the reach report', () => {
  it('lists every registry variant with WGSL, harness cases and reach, and keeps the device columns', async () => {
    const doc = join(dir, 'kernel-support.md');
    copyFileSync(SUPPORT_DOC, doc);
    const before = parseSupportDoc(readFileSync(doc, 'utf8'));
    const md = await writeSupportDocument(doc, { reach: report });
    const after = parseSupportDoc(md);
    expect(after.map((c) => c.device)).toEqual(before.map((c) => c.device));
    for (const old of before) {
      const now = after.find((c) => c.device === old.device)!;
      expect(now.adapter).toBe(old.adapter);
      for (const [id, cell] of old.cells) expect(now.cells.get(id), `${old.device} ${id}`).toBe(cell);
    }
    const rows = md.split('\n').filter((l) => /^\| `[a-z0-9_]+\.[A-Za-z0-9_]+` \|/.test(l));
    expect(rows).toHaveLength(302);
    expect(md).toMatch(/\| `matmul\.q4_fused_gemv` \| yes \(fused_matmul_q4\.wgsl main_gemv\) \| subgroups \| \d+ \| pinned \| `linear\.q4k_gemv` \| swiftshader \(/);
    expect(md).toMatch(/\| `matmul\.f16` \| yes \(matmul_f16\.wgsl main\) \|/);
    expect(md).toMatch(/\| `matmul\.w4a16_batched_f16a` \| no: not recoverable from the registry \(below\) \(fused_matmul_w4a16_batched_f16a\.wgsl main_batched_f16a\) \|/);
    expect(md).toMatch(/\n- `matmul\.w4a16_batched_f16a`: .*W4A16/);
    expect(md).toMatch(/\| `gelu_backward\.default` \| no: file missing /);
    expect(md).toMatch(/\| `sample\.argmax` \| yes .*\| none: no CPU reference for the operation \| unused \|/);
    expect(md).toMatch(/\| nvidia-h200 \| measured \| \d+ \| \d+ \| \d+ \| \d+ \|/);
    // a harness run afterwards (tessera selftest --support) keeps the reach cells
    const cells = parseReachCells(md);
    expect(cells.get('matmul.q4_fused_gemv')!.named).toBe('`linear.q4k_gemv`');
    expect(cells.size).toBe(302);
  });
});
