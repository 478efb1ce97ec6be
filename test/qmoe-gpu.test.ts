/**
 * com.microsoft.QMoE on the GPU (src/contracts/run.ts + src/kernels/qmoe/*.wgsl.jinja) against the CPU reference
 * (src/reference/qmoe.ts) and ONNX Runtime's CPU kernel, for the shared case list and every variant this device
 * supports; plus the errors bad inputs get.
 *
 * Tolerance (f32 activations, all variants): max |gpu - want| <= 1e-4 * max |want|, with want = the reference and,
 * separately, ORT's output.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ContractError, ContractInputError, type KernelContract } from '../src/contracts/index.ts';
import { loadContract } from '../src/node/contracts.ts';
import { runContract, type HostTensor } from '../src/contracts/run.ts';
import { describeAdapter, type TesseraDevice } from '../src/gpu/device.ts';
import { f16ToF32, f32ToF16 } from '../src/formats/f16.ts';
import { runQmoeOrt } from '../src/onnx/qmoe.ts';
import { makeQmoeInputs, QMOE_CASES, qmoeReferenceFromTensors, type QmoeCase, type QmoeTensors } from '../src/reference/qmoe-cases.ts';
import type { QmoeAttrs } from '../src/reference/qmoe.ts';
import { testDevice } from './helpers/device.ts';

const TOL = 1e-4;
const SEED = 424242;
const V1 = loadContract(new URL('../spec/qmoe.contract.json', import.meta.url).pathname);
const V2 = loadContract(new URL('../spec/qmoe.v2.contract.json', import.meta.url).pathname);
/** 4 lanes per row: decode kernels get enough lane trips on these small shapes (SwiftShader's subgroups are 4 wide). */
const TUNE_V1 = { decodeLanes: 4, decodeMinLaneTrips: 2 };
// v2 with sgmatF16Compute off: these cases hold float32 variants to float32 precision (the f16 subgroup-matrix
// variant, which v2 picks by default for float32 activations where the device has it, has its own test below)
const TUNE = { ...TUNE_V1, sgmatF16Compute: false };

/** Cases beyond the shared list: rows that are not whole u32 words (byte-wise paths), odd inter sizes. */
const EXTRA: QmoeCase[] = [
  { name: 'x-k2-b4-row-swiglu-t3-unaligned', E: 3, k: 2, hidden: 36, inter: 10, bits: 4, block: 0, activation: 'swiglu', limit: 1.5, tokens: 3, biases: true },
  { name: 'x-k3-b8-row-relu-t40-unaligned', E: 5, k: 3, hidden: 30, inter: 18, bits: 8, block: 0, activation: 'relu', limit: null, tokens: 40, biases: false },
];
const CASES = [...QMOE_CASES, ...EXTRA];

function maxRelErr(got: Float32Array, want: Float32Array): number {
  let scale = 0;
  let err = 0;
  for (let i = 0; i < want.length; i++) {
    scale = Math.max(scale, Math.abs(want[i]!));
    const d = Math.abs(got[i]! - want[i]!);
    err = Number.isNaN(d) ? Infinity : Math.max(err, d);
  }
  return scale > 0 ? err / scale : err;
}

function inputsFor(contract: KernelContract, t: QmoeTensors): Record<string, HostTensor> {
  const out: Record<string, HostTensor> = {};
  for (const [k, v] of Object.entries(t)) if (v && k in contract.inputs) out[k] = v;
  return out;
}
const withoutBiases = (t: QmoeTensors): QmoeTensors => {
  const { fc1BiasT: _a, fc2BiasT: _b, ...rest } = t;
  return rest;
};

interface Prepared {
  c: QmoeCase;
  tensors: QmoeTensors;
  attrs: QmoeAttrs;
  ref: Float32Array;
  /** ORT CPU's output; undefined where onnxruntime-node is not installed (the GPU lane's packed deps). */
  ort: Float32Array | undefined;
}

let ortMissingLogged = false;
/** ORT CPU's output, or undefined (said once in the output) where onnxruntime-node is not installed. */
async function ortOutput(tensors: QmoeTensors, attrs: QmoeAttrs): Promise<Float32Array | undefined> {
  try {
    return await runQmoeOrt(tensors, attrs);
  } catch (e) {
    if (!/Cannot find (package|module) 'onnxruntime-node'/.test((e as Error).message)) throw e;
    if (!ortMissingLogged) {
      console.log('onnxruntime-node is not installed here: comparing with the CPU reference only (test/qmoe-oracle.test.ts checks that reference against ORT)');
      ortMissingLogged = true;
    }
    return undefined;
  }
}
const prepared = new Map<string, Prepared>();
async function prepare(c: QmoeCase, biases: boolean): Promise<Prepared> {
  const key = `${c.name}|${biases}`;
  let p = prepared.get(key);
  if (!p) {
    const { tensors: all, attrs } = makeQmoeInputs(c, SEED);
    const tensors = biases ? all : withoutBiases(all);
    const ref = qmoeReferenceFromTensors(tensors, attrs).output;
    const ort = await ortOutput(tensors, attrs);
    p = { c, tensors, attrs, ref, ort };
    prepared.set(key, p);
  }
  return p;
}

let dev: TesseraDevice;
const ran: string[] = [];
beforeAll(async () => {
  dev = await testDevice();
  console.log(`QMoE GPU tests on adapter: ${describeAdapter(dev.caps)}`);
});

async function check(contract: KernelContract, p: Prepared, variant: string | undefined, tunables: Record<string, number | boolean>, expected: string): Promise<void> {
  const r = await runContract(dev, contract, { inputs: inputsFor(contract, p.tensors), attributes: { ...p.attrs }, tunables, ...(variant ? { variant } : {}) });
  expect(r.plan.variant).toBe(expected);
  const out = r.outputs.outputT!;
  expect(out.shape).toEqual(p.tensors.inputT.shape);
  const got = out.data as Float32Array;
  const vsRef = maxRelErr(got, p.ref);
  const vsOrt = p.ort ? maxRelErr(got, p.ort) : undefined;
  ran.push(`${p.c.name} ${contract === V1 ? 'v1' : 'v2'} ${r.plan.variant}: ref ${vsRef.toExponential(1)}, ort ${vsOrt?.toExponential(1) ?? 'not installed'}`);
  expect(vsRef, `${p.c.name} ${r.plan.variant} vs reference`).toBeLessThanOrEqual(TOL);
  if (vsOrt !== undefined) expect(vsOrt, `${p.c.name} ${r.plan.variant} vs ONNX Runtime`).toBeLessThanOrEqual(TOL);
}

/** The variant the contract picks on this device for the case's shapes with TUNE (asserted in each test). */
function defaultVariant(c: QmoeCase): string {
  const grouped = c.tokens * c.k * 4 >= 32 * c.E; // groupedShapeOk with groupTileM = 32
  return grouped ? 'quant_grouped_routed' : 'quant_gemv_routed';
}

describe('QMoE on the GPU vs the CPU reference and ONNX Runtime (max abs err <= 1e-4 * max |ref|)', () => {
  for (const c of CASES) {
    it(`${c.name}: v2 (${c.biases ? 'with' : 'without'} biases), the variant the contract picks`, async () => {
      await check(V2, await prepare(c, c.biases), undefined, TUNE, defaultVariant(c));
    });
    it(`${c.name}: v2, the split (fallback) variant`, async () => {
      await check(V2, await prepare(c, c.biases), 'quant_split_routed', TUNE, 'quant_split_routed');
    });
    if (defaultVariant(c) === 'quant_grouped_routed') {
      // Many tokens on the decode kernels too (8 lanes: 2 subgroups per row on SwiftShader).
      it(`${c.name}: v2, the gemv variant for ${c.tokens} tokens`, async () => {
        await check(V2, await prepare(c, c.biases), 'quant_gemv_routed', { decodeLanes: 8, decodeMinLaneTrips: 2 }, 'quant_gemv_routed');
      });
    }
    if (!c.biases && (defaultVariant(c) === 'quant_gemv_routed' || c.name === 'k4-b8-blk64-relu-t80')) {
      // The seed contract: no subgroup reductions (workgroup-memory trees), no bias bindings. (Grouped kernels take
      // about a second each to compile on SwiftShader, so v1 runs one grouped case.)
      it(`${c.name}: v1 (seed contract), the variant it picks`, async () => {
        await check(V1, await prepare(c, false), undefined, TUNE_V1, defaultVariant(c));
      });
    }
  }

  it('decode with the default tunables (32 lanes per row: subgroup reductions over several subgroups or one)', async () => {
    const c: QmoeCase = { name: 'x-k4-b4-blk32-swiglu-t2-wide', E: 8, k: 4, hidden: 256, inter: 128, bits: 4, block: 32, activation: 'swiglu', limit: 7, tokens: 2, biases: true, alpha: 1.702, beta: 1 };
    await check(V2, await prepare(c, true), undefined, {}, 'quant_gemv_routed');
  });

  it('tied router logits: the higher expert index wins, as in ONNX Runtime', async () => {
    const c: QmoeCase = { name: 'x-ties-k3-b4-row-relu-t8', E: 6, k: 3, hidden: 32, inter: 16, bits: 4, block: 0, activation: 'relu', limit: null, tokens: 8, biases: false };
    const { tensors, attrs } = makeQmoeInputs(c, SEED);
    // Logits in {-1, 0, 1}: most tokens have ties at the k-th place.
    const r = tensors.routerT.data;
    for (let i = 0; i < r.length; i++) r[i] = Math.max(-1, Math.min(1, Math.round(r[i]! / 2)));
    const p: Prepared = { c, tensors, attrs, ref: qmoeReferenceFromTensors(tensors, attrs).output, ort: await ortOutput(tensors, attrs) };
    if (p.ort) expect(maxRelErr(p.ref, p.ort)).toBeLessThanOrEqual(TOL);
    await check(V1, p, 'quant_split_routed', TUNE_V1, 'quant_split_routed');
    await check(V2, p, 'quant_gemv_routed', TUNE, 'quant_gemv_routed');
  });

  it('grouped tiles with odd tunables (tails in every tile dimension, byte-wise weight staging)', async () => {
    const tunables = { decodeLanes: 4, groupThreads: 4, groupRegM: 3, groupRegN: 2, groupTileK: 12 };
    for (const name of ['k4-b4-blk16-relu-t72-odd', 'k2-b4-blk64-swiglu-gptoss-t64-bias']) {
      const c = CASES.find((x) => x.name === name)!;
      await check(V2, await prepare(c, c.biases), 'quant_grouped_routed', tunables, 'quant_grouped_routed');
    }
  });

  it('token chunks: a device whose storage binding limit holds 7 tokens of hidden activations runs 40 tokens in 6 chunks', async () => {
    const c = CASES.find((x) => x.name === 'x-k3-b8-row-relu-t40-unaligned')!;
    const p = await prepare(c, false);
    // hiddenChunkTokens = floor(limit / (k * inter * 4)) = floor(7 * 216 / 216) = 7 → ceil(40 / 7) = 6 chunks.
    const limited = { ...dev, caps: { ...dev.caps, limits: { ...dev.caps.limits, maxStorageBufferBindingSize: 7 * c.k * c.inter * 4 } } };
    const r = await runContract(limited, V1, { inputs: inputsFor(V1, p.tensors), attributes: { ...p.attrs }, tunables: TUNE_V1, variant: 'quant_gemv_routed' });
    expect(r.plan.passes.filter((q) => q.id === 'output_stage')).toHaveLength(6);
    expect(maxRelErr(r.outputs.outputT!.data as Float32Array, p.ref)).toBeLessThanOrEqual(TOL);
  });

  it('inter size 0: every expert output is 0 (quant_zero_inter, v1 and v2)', async () => {
    const E = 4;
    const H = 16;
    const T = 3;
    const inputs: Record<string, HostTensor> = {
      inputT: { dtype: 'float32', shape: [T, H], data: new Float32Array(T * H).fill(1) },
      routerT: { dtype: 'float32', shape: [T, E], data: new Float32Array(T * E) },
      fc1T: { dtype: 'uint8', shape: [E, 0, H / 2], data: new Uint8Array(0) },
      fc1ScalesT: { dtype: 'float32', shape: [E, 0], data: new Float32Array(0) },
      fc2T: { dtype: 'uint8', shape: [E, H, 0], data: new Uint8Array(0) },
      fc2ScalesT: { dtype: 'float32', shape: [E, H], data: new Float32Array(E * H) },
    };
    for (const contract of [V1, V2]) {
      const r = await runContract(dev, contract, { inputs, attributes: { k: 2 } });
      expect(r.plan.variant).toBe('quant_zero_inter');
      expect([...(r.outputs.outputT!.data as Float32Array)]).toEqual(new Array(T * H).fill(0));
    }
  });

  it('ran (variant and max relative error of each run)', () => {
    console.log(`QMoE GPU runs:\n  ${ran.join('\n  ')}`);
    expect(ran.length).toBeGreaterThan(0);
  });
});

describe('QMoE f16 activations and subgroup matrices (GPU lane)', () => {
  const f16Case = CASES.find((x) => x.name === 'k2-b4-blk64-swiglu-gptoss-t64-bias')!;
  /** Rounds the case's float tensors to f16 (bits for the GPU, rounded f32 for the reference). */
  function halfTensors(t: QmoeTensors): { gpu: Record<string, HostTensor>; ref: QmoeTensors } {
    const gpu: Record<string, HostTensor> = {};
    const ref = { ...t } as QmoeTensors;
    for (const [k, v] of Object.entries(t) as [keyof QmoeTensors, HostTensor][]) {
      if (!v) continue;
      if (k === 'inputT' || k === 'routerT' || k === 'fc1BiasT' || k === 'fc2BiasT') {
        const src = v.data as Float32Array;
        const bits = Uint16Array.from(src, (x) => f32ToF16(x));
        gpu[k] = { dtype: 'float16', shape: v.shape, data: bits };
        (ref as Record<string, unknown>)[k] = { ...v, data: Float32Array.from(bits, (b) => f16ToF32(b)) };
      } else gpu[k] = v;
    }
    return { gpu, ref };
  }

  it('f16 activations (needs shader-f16)', async (ctx) => {
    if (!dev.caps.features.has('shader-f16')) {
      console.log(`skipped: f16 activations need "shader-f16", which ${describeAdapter(dev.caps)} lacks (the GPU lane runs it)`);
      ctx.skip();
    }
    const { tensors, attrs } = makeQmoeInputs(f16Case, SEED);
    const { gpu, ref } = halfTensors(tensors);
    const want = qmoeReferenceFromTensors(ref, attrs).output;
    for (const variant of ['quant_gemv_routed', 'quant_grouped_routed', 'quant_split_routed']) {
      const r = await runContract(dev, V2, { inputs: gpu, attributes: { ...attrs }, tunables: TUNE, variant });
      const got = Float32Array.from(r.outputs.outputT!.data as Uint16Array, (b) => f16ToF32(b));
      // f16 output rounding (2^-11 relative) on top of f32 accumulation.
      expect(maxRelErr(got, want), variant).toBeLessThanOrEqual(2e-3);
    }
  });

  it('grouped subgroup-matrix variant, f16 x f16 -> f32 16x16x16 (needs chromium-experimental-subgroup-matrix)', async (ctx) => {
    const has = dev.caps.adapterInfo.subgroupMatrixConfigs?.some((m) => m.componentType === 'f16' && m.resultComponentType === 'f32' && m.M === 16 && m.N === 16 && m.K === 16);
    if (!dev.caps.features.has('chromium-experimental-subgroup-matrix') || !dev.caps.features.has('shader-f16') || !has) {
      console.log(`skipped: the subgroup-matrix variant needs "chromium-experimental-subgroup-matrix", "shader-f16" and an f16->f32 16x16x16 config, which ${describeAdapter(dev.caps)} lacks (the GPU lane runs it)`);
      ctx.skip();
    }
    const c: QmoeCase = { name: 'sgmat', E: 4, k: 2, hidden: 128, inter: 64, bits: 4, block: 32, activation: 'swiglu', limit: 7, tokens: 80, biases: true, alpha: 1.702, beta: 1 };
    const { tensors, attrs } = makeQmoeInputs(c, SEED);
    const want = qmoeReferenceFromTensors(tensors, attrs).output;
    // float32 activations, default tunables but the staging one: the contract picks this variant by default
    // (sgmatF16Compute is on); with and without staging (padded rows, vec4 activation loads, register prefetch)
    for (const sgmatStaging of [false, true]) {
      const r = await runContract(dev, V2, { inputs: inputsFor(V2, tensors), attributes: { ...attrs }, tunables: { sgmatStaging } });
      expect(r.plan.variant).toBe('quant_grouped_sgmat_f16_routed');
      // f16 rounding of activations and dequantised weights (2^-11 relative each), f32 accumulation.
      expect(maxRelErr(r.outputs.outputT!.data as Float32Array, want), `sgmatStaging ${sgmatStaging}`).toBeLessThanOrEqual(1e-2);
    }
  });
});

describe('QMoE bad inputs are refused with errors naming the input', () => {
  const c = CASES.find((x) => x.name === 'k2-b4-blk16-swiglu-t1')!;
  const base = () => {
    const { tensors, attrs } = makeQmoeInputs(c, SEED);
    return { inputs: inputsFor(V2, tensors), attrs: { ...attrs } as Record<string, number | string> };
  };
  async function refused(mutate: (i: Record<string, HostTensor>, a: Record<string, number | string>) => void, contract: KernelContract = V2): Promise<Error> {
    const { inputs, attrs } = base();
    mutate(inputs, attrs);
    try {
      await runContract(dev, contract, { inputs, attributes: attrs });
    } catch (e) {
      return e as Error;
    }
    throw new Error('expected the run to be refused');
  }

  it('a weight tensor of the wrong rank', async () => {
    const e = await refused((i) => {
      const w = i.fc1T!;
      i.fc1T = { ...w, shape: [w.shape[0]! * w.shape[1]!, w.shape[2]!] };
    });
    expect(e).toBeInstanceOf(ContractInputError);
    expect(e.message).toBe('com.microsoft.QMoE: input fc1T: must have rank 3, got shape [256,32] (rank 2)');
  });

  it('router logits of the wrong rank', async () => {
    const e = await refused((i) => {
      i.routerT = { ...i.routerT!, shape: [1, 1, 4] };
    });
    expect(e.message).toBe('com.microsoft.QMoE: input routerT: must have rank 2, got shape [1,1,4] (rank 3)');
  });

  it('a scale shape that disagrees with the weights (block-wise scales for another block size)', async () => {
    const e = await refused((i) => {
      const s = i.fc1ScalesT!;
      i.fc1ScalesT = { dtype: 'float32', shape: [s.shape[0]!, s.shape[1]!, 2], data: new Float32Array(s.shape[0]! * s.shape[1]! * 2) };
    });
    expect(e).toBeInstanceOf(ContractError);
    expect((e as ContractError).offending).toContain('input fc1ScalesT');
    expect(e.message).toContain('quantScalesOk');
    expect(e.message).toContain('shapes.fc1ScalesT = [4,64,2]');
  });

  it('k larger than the number of experts', async () => {
    const e = await refused((_, a) => {
      a.k = 5;
    });
    expect(e).toBeInstanceOf(ContractError);
    expect((e as ContractError).offending).toContain('attribute k');
    expect(e.message).toContain('"topK <= dim(shapes.routerT, 1)" is false (5 <= 4 is false');
  });

  it('unsupported attribute values', async () => {
    const act = await refused((_, a) => {
      a.activation_type = 'gelu';
    });
    expect(act).toBeInstanceOf(ContractInputError);
    expect(act.message).toBe('com.microsoft.QMoE: attribute activation_type: value "gelu" is not supported; allowed values: "relu", "swiglu"');
    const bits = await refused((_, a) => {
      a.expert_weight_bits = 2;
    });
    expect(bits.message).toBe('com.microsoft.QMoE: attribute expert_weight_bits: value 2 is not supported; allowed values: 4, 8');
    const sparse = await refused((_, a) => {
      a.use_sparse_mixer = 1;
    });
    expect(sparse.message).toBe('com.microsoft.QMoE: attribute use_sparse_mixer: value 1 is not supported; allowed values: 0');
  });

  it('a bias of the wrong shape (v2), and data that does not match its shape', async () => {
    const bias = await refused((i) => {
      i.fc2BiasT = { dtype: 'float32', shape: [4, 63], data: new Float32Array(4 * 63) };
    });
    expect(bias).toBeInstanceOf(ContractError);
    expect((bias as ContractError).offending).toContain('input fc2BiasT');
    expect(bias.message).toContain('fc2BiasOk');
    const data = await refused((i) => {
      i.inputT = { ...i.inputT!, data: new Float32Array(3) };
    });
    expect(data).toBeInstanceOf(ContractInputError);
    expect(data.message).toBe('com.microsoft.QMoE: input inputT: data has 12 bytes, but shape [1, 64] of float32 needs 256');
  });

  it('bias inputs are not inputs of the seed contract', async () => {
    const e = await refused((i) => {
      i.fc1BiasT = { dtype: 'float32', shape: [4, 64], data: new Float32Array(256) };
    }, V1);
    expect(e.message).toMatch(/^com\.microsoft\.QMoE: shape "fc1BiasT": not an input of QMoE; inputs are inputT, routerT/);
  });

  it('float16 activations on a device without shader-f16 get no variant (v2)', async (ctx) => {
    if (dev.caps.features.has('shader-f16')) ctx.skip();
    const e = await refused((i) => {
      const x = i.inputT!;
      i.inputT = { dtype: 'float16', shape: x.shape, data: new Uint16Array(x.shape.reduce((a, b) => a * b, 1)) };
      i.routerT = { dtype: 'float16', shape: i.routerT!.shape, data: new Uint16Array(4) };
    });
    expect(e).toBeInstanceOf(ContractError);
    expect(e.message).toContain('actDtypeOk');
  });
});
