/**
 * Benchmark: feeding and reading back host data of one size (default 1024 x 2880 f32, the gpt-oss-20b QMoE input at
 * 1024 tokens), the host side of every end-to-end op call. Each figure is the mean of 10 round trips after 3 warm-up
 * ones, all in one run:
 *   writeBuffer    queue.writeBuffer into a storage buffer, then onSubmittedWorkDone (Dawn stages the bytes itself)
 *   empty          an empty submit, then onSubmittedWorkDone (the round trip alone)
 *   readback       copy a storage buffer into a MAP_READ buffer, mapAsync, unmap
 *   mappedWrite    mapAsync(WRITE) a persistent MAP_WRITE buffer, memcpy into it, unmap, copy it on the GPU, wait
 *
 *   node --import tsx bench/upload.ts [--bytes N] [--out receipt.json]
 */
import { writeFileSync } from 'node:fs';
import { createDevice, describeAdapter } from '../src/gpu/device.ts';
import { receiptHeader } from './commit.ts';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
if (args.includes('--help')) {
  console.log('usage: node --import tsx bench/upload.ts [--bytes N] [--out receipt.json]');
  process.exit(0);
}
const bytes = Number(opt('--bytes') ?? 1024 * 2880 * 4);
if (!Number.isInteger(bytes) || bytes <= 0 || bytes % 4 !== 0) throw new Error(`--bytes must be a positive multiple of 4, not ${opt('--bytes')}`);

const dev = await createDevice();
const d = dev.device;
const adapter = describeAdapter(dev.caps);
console.log(`${adapter}: ${bytes} bytes`);
const dst = d.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC, label: 'upload.dst' });
const rd = d.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: 'upload.read' });
const up = d.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC, label: 'upload.write' });
const data = new Float32Array(bytes / 4).fill(1);

async function time(name: string, f: () => Promise<void>): Promise<[string, number]> {
  for (let i = 0; i < 3; i++) await f();
  const t0 = performance.now();
  for (let i = 0; i < 10; i++) await f();
  const ms = (performance.now() - t0) / 10;
  console.log(`${name}: ${ms.toFixed(2)} ms`);
  return [name, Math.round(ms * 1e4) / 1e4];
}

const figures = Object.fromEntries([
  await time('writeBuffer', async () => {
    d.queue.writeBuffer(dst, 0, data);
    await d.queue.onSubmittedWorkDone();
  }),
  await time('empty', async () => {
    d.queue.submit([d.createCommandEncoder().finish()]);
    await d.queue.onSubmittedWorkDone();
  }),
  await time('readback', async () => {
    const e = d.createCommandEncoder();
    e.copyBufferToBuffer(dst, 0, rd, 0, bytes);
    d.queue.submit([e.finish()]);
    await rd.mapAsync(GPUMapMode.READ);
    rd.unmap();
  }),
  await time('mappedWrite', async () => {
    await up.mapAsync(GPUMapMode.WRITE);
    new Float32Array(up.getMappedRange()).set(data);
    up.unmap();
    const e = d.createCommandEncoder();
    e.copyBufferToBuffer(up, 0, dst, 0, bytes);
    d.queue.submit([e.finish()]);
    await d.queue.onSubmittedWorkDone();
  }),
]);
const out = opt('--out');
if (out) {
  const receipt = { ...receiptHeader('upload', dev), bytes, method: 'mean ms of 10 round trips after 3 warm-up ones (see the header of bench/upload.ts)', msPerRoundTrip: figures };
  writeFileSync(out, JSON.stringify(receipt, null, 2) + '\n');
  console.log(`receipt: ${out}`);
}
process.exit(0);
