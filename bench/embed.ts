/**
 * Encoder benchmark: embeddings per second of BERT-base shapes (12 layers, hidden 768, 12 heads, intermediate 3072)
 * with random weights, at sequence length 128 and batch 1 and 64 (f16 dense weights where the device has shader-f16,
 * else f32), each batch a full forward with the hidden states read back. bench/torch_embed.py is the PyTorch peer
 * (eager, f16, the same shapes) for the same device call.
 * Usage: node --import tsx bench/embed.ts [--out FILE] [--seq 128] [--batch 1,64] [--reps 10]
 * Each batch size also gets one forward with per-dispatch GPU timestamps (where the device has timestamp-query),
 * summed per kernel label: gpuMsTotal and the largest kernels, to set against the wall time.
 */
import { writeFileSync } from 'node:fs';
import { createDevice, describeAdapter } from '../src/gpu/device.ts';
import { Encoder, encoderConfigFromHF, encoderTensorShapes } from '../src/models/encoder.ts';
import { kernelTotals, type KernelTime } from '../src/gpu/recorder.ts';
import { receiptHeader } from './commit.ts';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : def;
}

const BERT_BASE = { architectures: ['BertModel'], hidden_size: 768, num_hidden_layers: 12, num_attention_heads: 12, intermediate_size: 3072, vocab_size: 30522, max_position_embeddings: 512, type_vocab_size: 2, hidden_act: 'gelu', layer_norm_eps: 1e-12 };

const dev = await createDevice({ timestamps: true });
const cfg = encoderConfigFromHF(BERT_BASE, 'preset bert-base', () => true);
let seed = 7;
const tensors = new Map<string, Float32Array>();
for (const [name, shape] of encoderTensorShapes(cfg)) {
  const n = shape.reduce((a, b) => a * b, 1);
  const ln = name.endsWith('LayerNorm.weight');
  tensors.set(name, Float32Array.from({ length: n }, () => (ln ? 1 : ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32 - 0.5) * 0.04)));
}
const weights = dev.caps.features.has('shader-f16') ? 'f16' : 'f32';
const enc = Encoder.fromTensors(dev, cfg, tensors, { weights });
const seq = Number(arg('seq', '128'));
const reps = Number(arg('reps', '10'));
const results: unknown[] = [];
console.log(`${describeAdapter(dev.caps)}: BERT-base shapes, ${weights} dense weights, sequence ${seq}`);
for (const batch of arg('batch', '1,64').split(',').map(Number)) {
  const seqs = Array.from({ length: batch }, (_, b) => ({ ids: Array.from({ length: seq }, (_, t) => (b * 131 + t * 17) % cfg.vocabSize) }));
  await enc.forwardBatch(seqs); // compiles the (batch, length) program
  const times: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await enc.forwardBatch(seqs);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const ms = times[times.length >> 1]!;
  const perSecond = (batch / ms) * 1000;
  // one more forward, timed per dispatch (not part of the wall-time median above)
  const kernelTimes: KernelTime[] = [];
  await enc.forwardBatch(seqs, { kernelTimes });
  const gpuMsTotal = kernelTimes.reduce((a, k) => a + k.ms, 0);
  const kernels = [...kernelTotals(kernelTimes)].sort((a, b) => b[1].ms - a[1].ms).slice(0, 12).map(([label, e]) => ({ label, ms: +e.ms.toFixed(4), dispatches: e.dispatches }));
  results.push({ batch, sequence: seq, msPerBatchMedian: +ms.toFixed(3), msPerBatchMin: +times[0]!.toFixed(3), embeddingsPerSecond: +perSecond.toFixed(1), reps, dispatches: kernelTimes.length, gpuMsTotal: +gpuMsTotal.toFixed(3), kernels });
  console.log(`batch ${batch}: ${ms.toFixed(2)} ms per batch (median of ${reps}), ${perSecond.toFixed(1)} embeddings/s`);
  if (kernelTimes.length) console.log(`  GPU ${gpuMsTotal.toFixed(3)} ms over ${kernelTimes.length} dispatches; largest: ${kernels.slice(0, 5).map((k) => `${k.label} ${k.ms} ms`).join(', ')}`);
  else console.log('  (no per-dispatch timestamps on this device)');
}
const out = arg('out', 'bench-embed.json');
writeFileSync(
  out,
  JSON.stringify(
    {
      ...receiptHeader('embed', dev),
      model: 'BERT-base shapes (random weights)',
      weights,
      method: 'wall time of Encoder.forwardBatch (ids upload, one compiled program, hidden states [batch x seq x 768] read back) after a compiling run; median of the repetitions. gpuMsTotal / kernels: one further forward with per-dispatch timestamps, summed per kernel label (largest 12)',
      results,
    },
    null,
    1,
  ),
);
console.log(`wrote ${out}`);
enc.destroy();
dev.destroy();
