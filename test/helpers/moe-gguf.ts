/**
 * GGUF files in llama.cpp's MoE layout (qwen3moe, gpt-oss) written by our writer: the metadata keys (tensor names:
 * default-gguf.ts's ggufName), and a converter from an HF MoE folder (f32 tensors; gpt-oss experts in the released
 * MXFP4 form) to a .gguf file. Facts from llama.cpp's convention: stacked ffn_{gate,up,down}_exps [E, rows, in], the router as
 * ffn_gate_inp, sinks as attn_sinks, gpt-oss's post-attention norm as post_attention_norm, MXFP4 blocks of
 * { e8m0 scale, 16 bytes: element j in the low nibble of byte j, element j + 16 in its high nibble }.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GgmlType, gv, parseSafetensorsBytes, writeGguf, type GgufMetadataInput, type GgufTensorToWrite } from '../../src/formats/index.ts';
import { ggufName } from './default-gguf.ts';

export const asBytes = (x: Float32Array) => new Uint8Array(x.buffer, x.byteOffset, x.byteLength);

/** The metadata llama.cpp reads for these architectures, from an HF config.json object. */
export function moeMeta(arch: string, cfg: Record<string, unknown>, extra: Record<string, GgufMetadataInput>): Record<string, GgufMetadataInput> {
  const rp = cfg.rope_parameters as { rope_theta: number };
  return {
    'general.architecture': arch,
    'general.alignment': gv.u32(32),
    [`${arch}.block_count`]: gv.u32(cfg.num_hidden_layers as number),
    [`${arch}.embedding_length`]: gv.u32(cfg.hidden_size as number),
    [`${arch}.feed_forward_length`]: gv.u32(cfg.intermediate_size as number),
    [`${arch}.attention.head_count`]: gv.u32(cfg.num_attention_heads as number),
    [`${arch}.attention.head_count_kv`]: gv.u32(cfg.num_key_value_heads as number),
    [`${arch}.attention.key_length`]: gv.u32(cfg.head_dim as number),
    [`${arch}.attention.value_length`]: gv.u32(cfg.head_dim as number),
    [`${arch}.context_length`]: gv.u32(cfg.max_position_embeddings as number),
    [`${arch}.rope.freq_base`]: gv.f32(rp.rope_theta),
    [`${arch}.attention.layer_norm_rms_epsilon`]: gv.f32((cfg.rms_norm_eps as number) ?? 1e-6),
    [`${arch}.vocab_size`]: gv.u32(cfg.vocab_size as number),
    [`${arch}.expert_used_count`]: gv.u32(cfg.num_experts_per_tok as number),
    ...extra,
  };
}

export async function writeGgufFile(arch: string, m: Record<string, GgufMetadataInput>, tensors: GgufTensorToWrite[]): Promise<string> {
  const file = join(mkdtempSync(join(tmpdir(), 'tessera-moe-gguf-')), `${arch}.gguf`);
  await writeGguf(file, m, tensors);
  return file;
}

/**
 * HF MXFP4 rows (blocks [rows, in/32, 16] with element 2j in the low nibble of byte j, scales [rows, in/32]) -> GGUF
 * MXFP4 blocks of 17 bytes: the same codes and scales, regrouped (nothing is rounded).
 */
function mxfp4HfToGguf(blocks: Uint8Array, scales: Uint8Array, rows: number, rowOrder: number[]): Uint8Array {
  const perRow = scales.length / rows;
  const out = new Uint8Array(rowOrder.length * perRow * 17);
  const codes = new Uint8Array(32);
  let o = 0;
  for (const r of rowOrder) {
    for (let b = 0; b < perRow; b++) {
      const blk = r * perRow + b;
      for (let j = 0; j < 16; j++) {
        const byte = blocks[blk * 16 + j]!;
        codes[2 * j] = byte & 15;
        codes[2 * j + 1] = byte >> 4;
      }
      out[o] = scales[blk]!;
      for (let j = 0; j < 16; j++) out[o + 1 + j] = codes[j]! | (codes[j + 16]! << 4);
      o += 17;
    }
  }
  return out;
}

/**
 * Write an HF Qwen3-MoE or gpt-oss folder (as scripts/goldens-moe.py saves them) as a GGUF in llama.cpp's layout.
 * Qwen3-MoE: per-expert f32 tensors stacked; mlp_only layers keep their dense ffn_{gate,up,down}; norm_topk_prob goes
 * to expert_weights_norm. gpt-oss: MXFP4 experts (the released form) regrouped into GGUF MXFP4, interleaved gate/up
 * rows split into ffn_gate_exps / ffn_up_exps; f32 (dequantized) experts stay f32.
 */
export async function moeFolderToGguf(dir: string): Promise<string> {
  const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  const bytes = readFileSync(join(dir, 'model.safetensors'));
  const header = parseSafetensorsBytes(join(dir, 'model.safetensors'), bytes);
  const raw = (name: string) => {
    const e = header.tensors.find((t) => t.name === name);
    if (!e) throw new Error(`${dir}: no tensor ${name}`);
    return { shape: e.shape, data: new Uint8Array(bytes.buffer, bytes.byteOffset + e.begin, e.end - e.begin), dtype: e.dtype };
  };
  const f32 = (name: string) => {
    const r = raw(name);
    if (r.dtype !== 'F32') throw new Error(`${dir}: ${name} is ${r.dtype}, the converter takes F32`);
    return new Float32Array(r.data.slice().buffer);
  };
  const arch = (cfg.architectures as string[])[0] === 'GptOssForCausalLM' ? 'gpt-oss' : 'qwen3moe';
  const L = cfg.num_hidden_layers as number;
  const H = cfg.hidden_size as number;
  const E = (cfg.num_local_experts ?? cfg.num_experts) as number;
  const tensors: GgufTensorToWrite[] = [];
  for (const t of header.tensors) {
    if (/\.mlp\.experts\./.test(t.name)) continue;
    tensors.push({ name: ggufName(t.name, arch), type: GgmlType.F32, shape: [...t.shape], data: asBytes(f32(t.name)) });
  }
  const stack = (parts: Float32Array[]) => {
    const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  };
  let extra: Record<string, GgufMetadataInput>;
  if (arch === 'qwen3moe') {
    const I = cfg.moe_intermediate_size as number;
    for (let l = 0; l < L; l++) {
      if (!header.tensors.some((t) => t.name === `model.layers.${l}.mlp.experts.0.gate_proj.weight`)) continue;
      for (const [part, rows, cols] of [['gate', I, H], ['up', I, H], ['down', H, I]] as const) {
        const x = stack(Array.from({ length: E }, (_, e) => f32(`model.layers.${l}.mlp.experts.${e}.${part}_proj.weight`)));
        tensors.push({ name: `blk.${l}.ffn_${part}_exps.weight`, type: GgmlType.F32, shape: [E, rows, cols], data: asBytes(x) });
      }
    }
    extra = {
      'qwen3moe.expert_count': gv.u32(E),
      'qwen3moe.expert_feed_forward_length': gv.u32(I),
      'qwen3moe.expert_weights_norm': gv.bool(Boolean(cfg.norm_topk_prob)),
    };
  } else {
    const I = cfg.intermediate_size as number;
    const gateRows = (e: number) => Array.from({ length: I }, (_, i) => e * 2 * I + 2 * i);
    const upRows = (e: number) => gateRows(e).map((r) => r + 1);
    const all = (n: number, f: (e: number) => number[]) => Array.from({ length: n }, (_, e) => f(e)).flat();
    for (let l = 0; l < L; l++) {
      const p = `model.layers.${l}.mlp.experts`;
      if (header.tensors.some((t) => t.name === `${p}.gate_up_proj_blocks`)) {
        const gu = raw(`${p}.gate_up_proj_blocks`).data;
        const gus = raw(`${p}.gate_up_proj_scales`).data;
        tensors.push({ name: `blk.${l}.ffn_gate_exps.weight`, type: GgmlType.MXFP4, shape: [E, I, H], data: mxfp4HfToGguf(gu, gus, 2 * E * I, all(E, gateRows)) });
        tensors.push({ name: `blk.${l}.ffn_up_exps.weight`, type: GgmlType.MXFP4, shape: [E, I, H], data: mxfp4HfToGguf(gu, gus, 2 * E * I, all(E, upRows)) });
        const d = raw(`${p}.down_proj_blocks`).data;
        const ds = raw(`${p}.down_proj_scales`).data;
        tensors.push({ name: `blk.${l}.ffn_down_exps.weight`, type: GgmlType.MXFP4, shape: [E, H, I], data: mxfp4HfToGguf(d, ds, E * H, Array.from({ length: E * H }, (_, r) => r)) });
      } else {
        // dequantized form: gate_up_proj [E, H, 2I] (columns interleaved gate, up), down_proj [E, I, H]
        const gu = f32(`${p}.gate_up_proj`);
        const d = f32(`${p}.down_proj`);
        const gate = new Float32Array(E * I * H);
        const up = new Float32Array(E * I * H);
        const down = new Float32Array(E * H * I);
        for (let e = 0; e < E; e++) {
          for (let i = 0; i < I; i++) {
            for (let h = 0; h < H; h++) {
              gate[(e * I + i) * H + h] = gu[(e * H + h) * 2 * I + 2 * i]!;
              up[(e * I + i) * H + h] = gu[(e * H + h) * 2 * I + 2 * i + 1]!;
              down[(e * H + h) * I + i] = d[(e * I + i) * H + h]!;
            }
          }
        }
        tensors.push({ name: `blk.${l}.ffn_gate_exps.weight`, type: GgmlType.F32, shape: [E, I, H], data: asBytes(gate) });
        tensors.push({ name: `blk.${l}.ffn_up_exps.weight`, type: GgmlType.F32, shape: [E, I, H], data: asBytes(up) });
        tensors.push({ name: `blk.${l}.ffn_down_exps.weight`, type: GgmlType.F32, shape: [E, H, I], data: asBytes(down) });
      }
      const b = f32(`${p}.gate_up_proj_bias`);
      tensors.push({ name: `blk.${l}.ffn_gate_exps.bias`, type: GgmlType.F32, shape: [E, I], data: asBytes(b.filter((_, j) => j % 2 === 0)) });
      tensors.push({ name: `blk.${l}.ffn_up_exps.bias`, type: GgmlType.F32, shape: [E, I], data: asBytes(b.filter((_, j) => j % 2 === 1)) });
      tensors.push({ name: `blk.${l}.ffn_down_exps.bias`, type: GgmlType.F32, shape: [E, H], data: asBytes(f32(`${p}.down_proj_bias`)) });
    }
    const rp = cfg.rope_parameters as { factor: number; original_max_position_embeddings: number };
    extra = {
      'gpt-oss.expert_count': gv.u32(E),
      'gpt-oss.expert_feed_forward_length': gv.u32(I),
      'gpt-oss.attention.sliding_window': gv.u32(cfg.sliding_window as number),
      'gpt-oss.rope.scaling.type': gv.str('yarn'),
      'gpt-oss.rope.scaling.factor': gv.f32(rp.factor),
      'gpt-oss.rope.scaling.original_context_length': gv.u32(rp.original_max_position_embeddings),
    };
  }
  return writeGgufFile(arch, moeMeta(arch, cfg, extra), tensors);
}
