/** Tiny MoE checkpoints written on the fly for the MoE tests (config.json + model.safetensors in a temp folder). */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serializeSafetensors, type TensorToWrite } from '../../src/formats/safetensors.ts';
import { decoderConfigFromHF } from '../../src/models/config.ts';
import { openModelSource } from '../../src/models/source.ts';
import { weightSpecs } from '../../src/models/weights.ts';

/** The dense Qwen3 fixture with transformers goldens. */
export const QWEN3_DENSE = 'test/fixtures/hf/qwen3';

export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

export const f32 = (name: string, shape: number[], x: Float32Array): TensorToWrite => ({ name, dtype: 'F32', shape, data: new Uint8Array(x.buffer, x.byteOffset, x.byteLength) });
export const u8 = (name: string, shape: number[], x: Uint8Array): TensorToWrite => ({ name, dtype: 'U8', shape, data: x });

export function writeModel(config: object, tensors: TensorToWrite[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-moe-'));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  writeFileSync(join(dir, 'model.safetensors'), serializeSafetensors(tensors));
  return dir;
}

/** [E, R, C] -> [E, C, R] */
export function t3(x: Float32Array, E: number, R: number, C: number): Float32Array {
  const y = new Float32Array(x.length);
  for (let e = 0; e < E; e++) for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) y[e * R * C + c * R + r] = x[e * R * C + r * C + c]!;
  return y;
}

/** Random tensors for every spec of a config (norms near 1, sinks and biases small). */
export function randomTensors(raw: Record<string, unknown>, seed: number): Map<string, { shape: number[]; x: Float32Array }> {
  const cfg = decoderConfigFromHF(raw);
  const r = rng(seed);
  const out = new Map<string, { shape: number[]; x: Float32Array }>();
  for (const s of weightSpecs(cfg)) {
    const n = s.shape.reduce((a, b) => a * b, 1);
    const scale = s.kind === 'norm' ? 0.2 : s.kind === 'bias' ? 0.2 : s.kind === 'embedding' ? 1 : 0.5;
    const x = new Float32Array(n).map(() => (s.kind === 'norm' ? 1 : 0) + scale * r());
    out.set(s.name, { shape: s.shape, x });
  }
  return out;
}

/** The dense qwen3 fixture as a Qwen3-MoE whose experts are all its MLP (layer 1 kept dense via mlp_only_layers). */
export async function moeFromDense(stacked: boolean): Promise<string> {
  const src = await openModelSource(QWEN3_DENSE);
  const dc = JSON.parse(readFileSync(`${QWEN3_DENSE}/config.json`, 'utf8'));
  const E = 4;
  const config = {
    ...dc, architectures: ['Qwen3MoeForCausalLM'], model_type: 'qwen3_moe', num_experts: E, num_experts_per_tok: 2,
    moe_intermediate_size: dc.intermediate_size, norm_topk_prob: true, decoder_sparse_step: 1, mlp_only_layers: [1],
  };
  const r = rng(3);
  const out: TensorToWrite[] = [];
  for (const name of src.names()) {
    const x = await src.toFloat32(name);
    const shape = src.info(name).shape;
    const m = /^(model\.layers\.0\.mlp\.)(gate|up|down)_proj\.weight$/.exec(name);
    if (!m) {
      out.push(f32(name, shape, x));
      continue;
    }
    if (stacked) continue;
    for (let e = 0; e < E; e++) out.push(f32(`${m[1]}experts.${e}.${m[2]}_proj.weight`, shape, x));
  }
  const p = 'model.layers.0.mlp.';
  if (stacked) {
    const g = await src.toFloat32(p + 'gate_proj.weight');
    const u = await src.toFloat32(p + 'up_proj.weight');
    const d = await src.toFloat32(p + 'down_proj.weight');
    const I = dc.intermediate_size;
    const H = dc.hidden_size;
    const gu = new Float32Array(E * 2 * I * H);
    const dd = new Float32Array(E * H * I);
    for (let e = 0; e < E; e++) {
      gu.set(g, e * 2 * I * H);
      gu.set(u, e * 2 * I * H + I * H);
      dd.set(d, e * H * I);
    }
    out.push(f32(p + 'experts.gate_up_proj', [E, 2 * I, H], gu), f32(p + 'experts.down_proj', [E, H, I], dd));
  }
  out.push(f32(p + 'gate.weight', [E, dc.hidden_size], new Float32Array(E * dc.hidden_size).map(() => r())));
  return writeModel(config, out);
}
