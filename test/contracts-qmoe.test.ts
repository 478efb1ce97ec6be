import { describe, expect, it } from 'vitest';
import { ContractError, ContractInputError, ContractPlanError, resolveContract, templateContext, type PlanBinding } from '../src/contracts/index.ts';
import { caught, editedProfile, gptOssAttrs, h200, moeShapes, plan, qmoe, swiftshader } from './contracts-helpers.ts';

/*
 * Hand derivation for gpt-oss-like QMoE (hidden 2880, inter 2880, 32 experts, top-4, 4-bit, SwiGLU
 * fused; default tunables: workgroupSize 64, decodeLanes 32, groupThreads 8, groupRegM/N 4, groupTileK 16):
 *   fusionSize 2, interSize 5760/2 = 2880, packSize 2, groupTileM = groupTileN = 32, decodeRows 64/32 = 2.
 *   hiddenChunkTokens = min(T, floor(min(maxStorageBufferBindingSize, maxBufferSize) / (4*2880*4 = 46080)))
 *     = T for T <= 1024 on both profiles (1 GiB / 46080 = 23301; 2 GiB / 46080 = 46604) → one chunk.
 * Variants by priority: grouped_sgmat 32, grouped 30, zero_inter 20, gemv 20 (document order breaks
 * the tie), split 10.
 *   - grouped_sgmat needs "chromium-experimental-subgroup-matrix" (SwiftShader lacks it) and an f32->f32
 *     8x8x8 subgroup-matrix config (the H200 offers only f16 and int8 configs) → rejected on both.
 *   - grouped needs groupedShapeOk: numTokens*topK*4 >= groupTileM*experts, i.e. 16*T >= 1024, T >= 64.
 *   - zero_inter needs interSize == 0 → never here.
 *   - gemv needs decodeOccupancyOk (ceilDiv(T*4*2880, 64) = 180*T <= 1024, i.e. T <= 5) OR not
 *     groupedContract; for T < 64 grouped fails, so gemv holds for T = 1 and T = 16.
 * ⇒ T = 1, 16: quant_gemv_routed; T = 128, 1024: quant_grouped_routed, on both profiles.
 */
describe('QMoE variant selection (gpt-oss-like shapes)', () => {
  for (const [label, device] of [['swiftshader', swiftshader], ['nvidia-h200', h200]] as const) {
    for (const [T, expected] of [[1, 'quant_gemv_routed'], [16, 'quant_gemv_routed'], [128, 'quant_grouped_routed'], [1024, 'quant_grouped_routed']] as const) {
      it(`${label}, ${T} tokens → ${expected}`, () => {
        const p = plan(T, device);
        expect(p.variant).toBe(expected);
        const rejected = p.rejected.map((r) => r.variant);
        expect(rejected).toEqual(T < 64 ? ['quant_grouped_sgmat_routed', 'quant_grouped_routed', 'quant_zero_inter'] : ['quant_grouped_sgmat_routed']);
      });
    }
  }

  it('explains each rejection (which clause, with values)', () => {
    const r = Object.fromEntries(plan(16, swiftshader).rejected.map((x) => [x.variant, x]));
    expect(r.quant_grouped_routed!.kind).toBe('when');
    expect(r.quant_grouped_routed!.reason).toBe(
      'when "groupedContract" is false: groupedContract -> groupedShapeOk -> "numTokens * topK * 4 >= groupTileM * dim(shapes.routerT, 1)" is false (256 >= 1024 is false; numTokens = 16, topK = 4, groupTileM = 32, shapes.routerT = [16,32])',
    );
    expect(r.quant_zero_inter!.reason).toBe('when "interSize == 0" is false (2880 == 0 is false; interSize = 2880)');
  });

  it('H200 and SwiftShader reject the subgroup-matrix variant for different reasons', () => {
    const ss = plan(128, swiftshader).rejected[0]!;
    const nv = plan(128, h200).rejected[0]!;
    expect(ss).toMatchObject({ variant: 'quant_grouped_sgmat_routed', kind: 'requires', reason: 'requires feature "chromium-experimental-subgroup-matrix", which the device lacks' });
    expect(nv.kind).toBe('requires');
    expect(nv.reason).toMatch(/^requires subgroup-matrix config f32->f32 8x8x8 \(component->result MxNxK\); the device offers f16->f16 16x16x16, /);
  });

  it('an H200 offering f32 8x8x8 subgroup matrices gets the sgmat variant; SwiftShader still fails wave32', () => {
    const cfg = { componentType: 'f32', resultComponentType: 'f32', M: 8, N: 8, K: 8 };
    const nv = editedProfile('nvidia-h200', (p) => p.adapterInfo.subgroupMatrixConfigs.push(cfg));
    const p = plan(128, nv);
    expect(p.variant).toBe('quant_grouped_sgmat_routed');
    // fc1 grouped-sgmat: x = groupMaxTiles = ceilDiv(128*4, 32) + 32 = 48; y = ceilDiv(2880*2, 64) = 90.
    expect(p.passes.find((q) => q.id === 'fc1_activation_stage')!.dispatch).toEqual([48, 90, 1]);
    // SwiftShader with the feature and config: subgroups are 4 wide and cannot be pinned to 32.
    const ss = editedProfile('swiftshader', (p) => {
      p.features.push('chromium-experimental-subgroup-matrix');
      p.adapterInfo.subgroupMatrixConfigs.push(cfg);
    });
    const q = plan(128, ss);
    expect(q.variant).toBe('quant_grouped_routed');
    expect(q.rejected[0]!.reason).toBe(
      'when "wave32Effective" is false: wave32Effective -> "wave32Adapter or pinSubgroupSize32" is false (wave32Adapter = false, pinSubgroupSize32 = false)',
    );
  });

  it('device limits decide: workgroupSize 512 fits the H200 (1024 invocations) but not SwiftShader (256)', () => {
    const nv = plan(1, h200, { tunables: { workgroupSize: 512 } });
    expect(nv.variant).toBe('quant_gemv_routed');
    // decodeRows = 512 / 32 = 16 → fc1 x = ceilDiv(2880, 16) = 180, y = 1 token * topK 4.
    expect(nv.passes.find((q) => q.id === 'fc1_activation_stage')!.dispatch).toEqual([180, 4, 1]);
    const e = caught(() => plan(1, swiftshader, { tunables: { workgroupSize: 512 } }), ContractError);
    expect(e.offending).toContain('tunable workgroupSize');
    expect(e.message).toContain(
      'quant_split_routed (priority 10): when "workgroupSizeOk" is false: workgroupSizeOk -> "tunables.workgroupSize <= deviceWorkgroupCap" is false (512 <= 256 is false; tunables.workgroupSize = 512, deviceWorkgroupCap = 256)',
    );
  });
});

describe('QMoE plans: passes, dispatch sizes, intermediates, uniforms', () => {
  it('1 token (gemv): dispatch sizes by hand', () => {
    const p = plan(1, swiftshader);
    // route: x = min(ceilDiv(1, 64), 65535) = 1; fc1: x = ceilDiv(2880, decodeRows 2) = 1440, y = 1*4;
    // output: x = 1440, y = 1 token.
    expect(p.passes.map((q) => [q.path, q.shader, q.dispatch])).toEqual([
      ['route_stage', 'qmoe-route-stage.wgsl.jinja', [1, 1, 1]],
      ['token_chunks[0].fc1_activation_stage', 'qmoe-fc1-activation-gemv.wgsl.jinja', [1440, 4, 1]],
      ['token_chunks[0].output_stage', 'qmoe-output-gemv.wgsl.jinja', [1440, 1, 1]],
    ]);
    expect(p.intermediates).toEqual([
      { id: 'routeExpert', dtype: 'uint32', shape: [4], bytes: 16 },
      { id: 'routeMix', dtype: 'float32', shape: [4], bytes: 16 },
      { id: 'hiddenAct', dtype: 'float32', shape: [11520], bytes: 46080 },
    ]);
  });

  it('128 tokens (grouped): dispatch sizes and intermediates by hand', () => {
    const p = plan(128, h200);
    // groupMaxTiles = ceilDiv(128*4, 32) + 32 = 48; fc1/out y = ceilDiv(2880, groupTileN 32) = 90;
    // route x = ceilDiv(128, 64) = 2; mix x = ceilDiv(128*2880, 64) = 5760.
    expect(p.passes.map((q) => [q.path, q.dispatch])).toEqual([
      ['route_stage', [2, 1, 1]],
      ['token_chunks[0].group_stage', [1, 1, 1]],
      ['token_chunks[0].fc1_activation_stage', [48, 90, 1]],
      ['token_chunks[0].output_stage', [48, 90, 1]],
      ['token_chunks[0].mix_stage', [5760, 1, 1]],
    ]);
    expect(p.intermediates.map((m) => [m.id, m.shape, m.bytes])).toEqual([
      ['routeExpert', [512], 2048],
      ['routeMix', [512], 2048],
      ['hiddenAct', [1474560], 5898240],
      ['slotList', [512], 2048],
      ['tileMeta', [145], 580],
      ['slotOut', [1474560], 5898240],
    ]);
  });

  it('1024 tokens: groupMaxTiles 160, mix x = ceilDiv(1024*2880, 64) = 46080', () => {
    const p = plan(1024, swiftshader);
    expect(p.passes.find((q) => q.id === 'fc1_activation_stage')!.dispatch).toEqual([160, 90, 1]);
    expect(p.passes.find((q) => q.id === 'mix_stage')!.dispatch).toEqual([46080, 1, 1]);
  });

  it('binds tensors, scratch buffers and packed uniform structs', () => {
    const p = plan(128, h200);
    const fc1 = p.passes.find((q) => q.id === 'fc1_activation_stage')!;
    const kinds = fc1.bindings.map((b) => [b.name, b.kind, b.kind === 'uniform' ? b.size : b.access]);
    expect(kinds).toEqual([
      ['input', 'tensor', 'read-only-storage'],
      ['slot_list', 'scratch', 'read-only-storage'],
      ['tile_meta', 'scratch', 'read-only-storage'],
      ['fc1_experts_weights', 'tensor', 'read-only-storage'],
      ['fc1_scales', 'tensor', 'read-only-storage'],
      ['hidden_act', 'scratch', 'storage'],
      ['params', 'uniform', 16],
    ]);
    const u = fc1.bindings.at(-1) as Extract<PlanBinding, { kind: 'uniform' }>;
    expect(u.fields).toEqual([
      { name: 'activationAlpha', type: 'f32', offset: 0, value: 1 },
      { name: 'activationBeta', type: 'f32', offset: 4, value: 0 },
      { name: 'tokenOffset', type: 'u32', offset: 8, value: 0 },
    ]);
    expect([...new Float32Array(u.data, 0, 2)]).toEqual([1, 0]);
    const route = p.passes[0]!.bindings.find((b) => b.kind === 'uniform') as Extract<PlanBinding, { kind: 'uniform' }>;
    expect(route.values).toEqual({ tokenCount: 128 });
    expect(new Uint32Array(route.data)[0]).toBe(128);
    expect(p.passes[0]!.bindings.find((b) => b.name === 'output')).toBeUndefined();
    const mix = p.passes.find((q) => q.id === 'mix_stage')!;
    expect(mix.bindings.find((b) => b.name === 'output')).toMatchObject({ kind: 'tensor', tensor: 'outputT', role: 'output', access: 'storage' });
  });

  it('expands repeat with repeat.chunk bound (4 chunks when a chunk holds 300 tokens)', () => {
    // maxStorageBufferBindingSize = 46080 * 300 → hiddenChunkTokens = 300, hiddenChunkCount = ceilDiv(1024, 300) = 4.
    const dev = editedProfile('nvidia-h200', (p) => {
      p.limits.maxStorageBufferBindingSize = 46080 * 300;
    });
    const p = plan(1024, dev);
    expect(p.variant).toBe('quant_grouped_routed');
    expect(p.passes).toHaveLength(1 + 4 * 4);
    const mixes = p.passes.filter((q) => q.id === 'mix_stage');
    expect(mixes.map((q) => q.path)).toEqual([0, 1, 2, 3].map((i) => `token_chunks[${i}].mix_stage`));
    expect(mixes.map((q) => q.repeat.chunk)).toEqual([0, 1, 2, 3]);
    // mix x = ceilDiv(tokensInChunk * 2880, 64): 300 → 13500, last chunk 124 → 5580.
    expect(mixes.map((q) => q.dispatch[0])).toEqual([13500, 13500, 13500, 5580]);
    const params = mixes.map((q) => (q.bindings.find((b) => b.kind === 'uniform') as Extract<PlanBinding, { kind: 'uniform' }>).values);
    expect(params).toEqual([
      { tokenOffset: 0, tokenCount: 300 },
      { tokenOffset: 300, tokenCount: 300 },
      { tokenOffset: 600, tokenCount: 300 },
      { tokenOffset: 900, tokenCount: 124 },
    ]);
  });

  it('outputs and template contexts', () => {
    const p = plan(16, swiftshader);
    expect(p.outputs).toEqual([{ name: 'outputT', dtype: 'float32', shape: [16, 2880] }]);
    expect(p.deriveErrors).toEqual({});
    const ctx = templateContext(p, p.passes[1]!);
    expect(ctx).toMatchObject({ hiddenSize: 2880, interSize: 2880, topK: 4, decodeRows: 2, decodeLanes: 32, workgroupSize: 64, variant: 'quant_gemv_routed' });
    expect(ctx.attrs.activation_type).toBe('swiglu');
    expect(ctx.repeat).toEqual({ chunk: 0 });
    expect(ctx.pass.shader).toBe('qmoe-fc1-activation-gemv.wgsl.jinja');
    const zero = resolveContract(qmoe, { shapes: moeShapes(8, { inter: 0 }), attributes: { ...gptOssAttrs }, device: swiftshader });
    expect(zero.variant).toBe('quant_zero_inter');
    expect(zero.passes[0]!.derived).toEqual({ outputElementCount: 8 * 2880 });
  });

  it('block-wise scales: [E, rows, cols/blockSize]', () => {
    const p = resolveContract(qmoe, { shapes: moeShapes(128, { blockSize: 32 }), attributes: { ...gptOssAttrs, block_size: 32 }, device: h200 });
    expect(p.variant).toBe('quant_grouped_routed');
    expect(p.derived.fc1ScaleBlocks).toBe(90);
  });

  it('relu without fusion, 8-bit weights', () => {
    const p = resolveContract(qmoe, { shapes: moeShapes(1, { bits: 8, swiglu: false }), attributes: { k: 2, expert_weight_bits: 8 }, device: swiftshader });
    expect(p.variant).toBe('quant_gemv_routed');
    expect(p.derived.packSize).toBe(1);
    expect(p.passes[1]!.dispatch).toEqual([1440, 2, 1]);
  });
});

describe('QMoE errors', () => {
  const base = (over: Record<string, number[]> = {}, attrs: Record<string, number | string> = {}, dtypes: Record<string, string> = {}) =>
    resolveContract(qmoe, { shapes: { ...moeShapes(4), ...over }, attributes: { ...gptOssAttrs, ...attrs }, dtypes, device: swiftshader, source: 'qmoe.contract.json' });

  it('k > experts: no variant; names attribute k and input routerT', () => {
    const e = caught(() => base({}, { k: 40 }), ContractError);
    expect(e.offending).toEqual(['attribute k', 'input routerT']);
    expect(e.message).toContain('(check attribute k, input routerT)');
    expect(e.message).toContain('quant_split_routed (priority 10): when "quantContract" is false: quantContract -> "topK <= dim(shapes.routerT, 1)" is false (40 <= 32 is false; topK = 40, shapes.routerT = [4,32])');
    expect(e.rejected).toHaveLength(5); // every variant, with its reason
  });

  it('wrong rank', () => {
    const e = caught(() => base({ fc1T: [32, 5760] }), ContractInputError);
    expect(e.message).toBe('com.microsoft.QMoE (qmoe.contract.json): input fc1T: must have rank 3, got shape [32,5760] (rank 2)');
    expect(e.subject).toBe('input fc1T');
  });

  it('scale shape mismatch points at the first false shape check', () => {
    const e = caught(() => base({ fc1ScalesT: [32, 2880] }), ContractError);
    expect(e.offending).toEqual(['input fc1ScalesT', 'input fc1T']);
    expect(e.message).toContain('quantContract -> quantShapeOk -> quantScalesOk -> "dim(shapes.fc1ScalesT, 1) == dim(shapes.fc1T, 1)" is false (2880 == 5760 is false; shapes.fc1ScalesT = [32,2880], shapes.fc1T = [32,5760,1440])');
    const blk = caught(() => base({ fc1ScalesT: [32, 5760, 45], fc2ScalesT: [32, 2880, 90] }, { block_size: 32 }), ContractError);
    expect(blk.message).toContain('"dim(shapes.fc1ScalesT, 2) == fc1ScaleBlocks" is false (45 == 90 is false');
  });

  it('a when that throws is a rejection with the error, not a crash', () => {
    const e = caught(() => base({ fc1ScalesT: [32] }), ContractError);
    expect(e.rejected[1]).toMatchObject({ variant: 'quant_grouped_routed', kind: 'error' });
    expect(e.rejected[1]!.reason).toBe(
      'when "groupedContract" could not be evaluated: groupedContract -> quantContract -> quantShapeOk -> quantScalesOk -> "dim(shapes.fc1ScalesT, 1) == dim(shapes.fc1T, 1)" could not be evaluated: derive.quantScalesOk: dim(): axis 1 is out of range for shape [32] (rank 1) at 217',
    );
    expect(e.offending).toEqual(['input fc1ScalesT', 'input fc1T']);
  });

  it('unsupported activation_type', () => {
    const e = caught(() => base({}, { activation_type: 'gelu' }), ContractInputError);
    expect(e.message).toBe('com.microsoft.QMoE (qmoe.contract.json): attribute activation_type: value "gelu" is not supported; allowed values: "relu", "swiglu"');
    // Allowed value, unsupported combination: swiglu without fusion.
    const c = caught(() => base({}, { swiglu_fusion: 0 }), ContractError);
    expect(c.message).toContain('quantContract -> activationSupported -> "(attrs.activation_type == "relu" and attrs.swiglu_fusion == 0) or (attrs.activation_type == "swiglu" and attrs.swiglu_fusion == 1)" is false');
    expect(c.offending).toEqual(['attribute activation_type', 'attribute swiglu_fusion']);
  });

  it('unknown and disallowed dtypes', () => {
    expect(caught(() => base({}, {}, { fc1T: 'uint3' }), ContractInputError).message).toMatch(/input fc1T: unknown dtype "uint3" \(did you mean "uint32"\?\); known dtypes: float64, /);
    expect(caught(() => base({}, {}, { fc1T: 'int8' }), ContractInputError).message).toContain('input fc1T: dtype int8 is not allowed by type constraint T1; allowed: uint8');
    expect(caught(() => base({}, {}, { nope: 'float32' }), ContractInputError).message).toContain('dtype "nope": not an input of QMoE');
  });

  it('unknown / missing inputs, unknown attributes and tunables', () => {
    const shapes = moeShapes(4);
    const { fc2ScalesT: _, ...missing } = shapes;
    expect(caught(() => resolveContract(qmoe, { shapes: missing, device: h200 }), ContractInputError).message).toContain('input fc2ScalesT: missing shape (ONNX input "fc2_scales")');
    expect(caught(() => resolveContract(qmoe, { shapes: { ...shapes, fc1Scales: [1] }, device: h200 }), ContractInputError).message).toContain('shape "fc1Scales": not an input of QMoE (did you mean "fc1ScalesT"?)');
    expect(caught(() => base({}, { topk: 4 }), ContractInputError).message).toContain('attribute topk: not an attribute of QMoE; attributes are activation_alpha, ');
    expect(caught(() => base({}, { kk: 4 }), ContractInputError).message).toContain('attribute kk: not an attribute of QMoE (did you mean "k"?)');
    expect(caught(() => resolveContract(qmoe, { shapes, device: h200, tunables: { workgroupsize: 1 } }), ContractInputError).message).toContain('did you mean "workgroupSize"?');
    expect(caught(() => base({ inputT: [4, 2880.5] }), ContractInputError).message).toContain('input inputT: shape must be a list of non-negative integers');
  });

  it('zero tokens: the chosen variant has an invalid dispatch size, named with pass and expression', () => {
    const e = caught(() => base(moeShapes(0)), ContractPlanError);
    expect(e.message).toBe(
      'com.microsoft.QMoE (qmoe.contract.json) variant quant_gemv_routed: pass route_stage dispatch.x "min(ceilDiv((numTokens), (workgroupSize)), 65535)": evaluates to 0; a dispatch size must be a positive integer <= 65535 (device.limits.maxComputeWorkgroupsPerDimension)',
    );
  });
});
