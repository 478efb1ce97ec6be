/**
 * Benchmark: does WGSL's dot4I8Packed run as the hardware's packed 4x8-bit dot product on this adapter, or as Tint's
 * polyfill (four sign extensions a side, a 4-wide dot)? The int8-activation GEMVs (gemv-q8a.wgsl.jinja) spend their
 * arithmetic there. Dawn's Vulkan backend turns its polyfill toggle (`polyfill_packed_4x8_dot_product`) on by force
 * only when the device lacks VK_KHR_shader_integer_dot_product; `--toggle polyfill_packed_4x8_dot_product` forces it
 * on for comparison. Two kernels, each invocation four independent chains of `--iters` dots of fresh operands, `--wg`
 * workgroups of 256:
 *   dot4I8Packed   the builtin
 *   byHand         the same dots with the bytes unpacked in WGSL (what the polyfill computes)
 * GPU time of one dispatch between two timestamps (bench/gpu-bench.ts spanMsPerCall; best of 10 after 3 warm-ups);
 * G dots/s = invocations x iters x 4 / time. Both kernels' outputs are compared, so a builtin that computes something
 * else fails the run.
 *
 *   node --import tsx bench/dp4a.ts [--toggle NAME] [--iters 4096] [--wg 4224] [--out receipt.json]
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { readBuffer } from '../src/gpu/buffers.ts';
import { createDevice, FAST_DAWN_ARGS } from '../src/gpu/device.ts';
import { receiptHeader } from './commit.ts';
import { type RecordCalls, spanMsPerCall } from './gpu-bench.ts';

const { values: a } = parseArgs({
  options: {
    toggle: { type: 'string' },
    iters: { type: 'string', default: '4096' },
    wg: { type: 'string', default: String(132 * 32) },
    out: { type: 'string' },
  },
});
const ITERS = Number(a.iters);
const WG = Number(a.wg);
const [enable, ...rest] = FAST_DAWN_ARGS;
const dev = await createDevice({ dawnArgs: a.toggle ? [`${enable},${a.toggle}`, ...rest] : FAST_DAWN_ARGS, timestamps: true });
const d = dev.device;

/** The kernel with `dot(x, y)` written as `dotOf('x', 'y')`. */
const shader = (dotOf: (x: string, y: string) => string) => /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> out: array<i32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3u) {
  let x = array<u32, 4>(g.x * 2654435761u, (g.x * 2654435761u) ^ 0x9e3779b9u, g.x * 2654435761u + 12345u, g.x * 7u);
  var y = g.x ^ 0x01020304u;
  var s = vec4i(0);
  for (var i = 0u; i < ${ITERS}u; i++) {
    y += 0x01010101u;
    s += vec4i(${[0, 1, 2, 3].map((k) => dotOf(`x[${k}]`, 'y')).join(', ')});
  }
  out[g.x] = s.x ^ s.y ^ s.z ^ s.w;
}`;
const bytesOf = (v: string) => `(bitcast<vec4i>(vec4u(${v}) << vec4u(24u, 16u, 8u, 0u)) >> vec4u(24u))`;
const KERNELS = {
  dot4I8Packed: shader((x, y) => `dot4I8Packed(${x}, ${y})`),
  byHand: shader((x, y) => `dot(${bytesOf(x)}, ${bytesOf(y)})`),
};

const n = WG * 256;
const results: Record<string, { ms: number; gdotsPerS: number }> = {};
const outputs: Int32Array[] = [];
for (const [name, code] of Object.entries(KERNELS)) {
  const buf = d.createBuffer({ size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const pipe = d.createComputePipeline({ layout: 'auto', compute: { module: d.createShaderModule({ code }), entryPoint: 'main' } });
  const bg = d.createBindGroup({ layout: pipe.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: buf } }] });
  const record: RecordCalls = async (rec, calls) => {
    for (let i = 0; i < calls; i++) rec.dispatch({ label: `bench.dp4a.${name}`, pipeline: pipe, bindGroup: bg, workgroups: [WG, 1, 1] });
  };
  for (let i = 0; i < 3; i++) await spanMsPerCall(dev, record, 1);
  let ms = Infinity;
  for (let i = 0; i < 10; i++) ms = Math.min(ms, await spanMsPerCall(dev, record, 1));
  results[name] = { ms, gdotsPerS: (n * ITERS * 4) / ms / 1e6 };
  outputs.push(new Int32Array(await readBuffer(d, buf)));
  buf.destroy();
}
const mismatch = outputs[0].findIndex((v, i) => v !== outputs[1][i]);
const receipt = {
  ...receiptHeader('dp4a', dev),
  toggle: a.toggle ?? null,
  iters: ITERS,
  workgroups: WG,
  method: 'GPU time of one dispatch between two timestamps, best of 10 after 3 warm-ups; G dots/s = invocations x iters x 4 / time',
  results,
  builtinRatio: results.byHand.ms / results.dot4I8Packed.ms,
  outputsAgree: mismatch < 0,
};
console.log(JSON.stringify(receipt.results), `byHand / builtin time ${receipt.builtinRatio.toFixed(2)}`, receipt.outputsAgree ? 'outputs agree' : `outputs differ at ${mismatch}`);
if (a.out) writeFileSync(a.out, JSON.stringify(receipt, null, 2));
dev.destroy();
if (mismatch >= 0) process.exit(1);
