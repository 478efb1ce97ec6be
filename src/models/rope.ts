/** RoPE inverse frequencies (default, linear, Llama 3) and cos/sin tables, shared by the GPU path and the CPU reference. */
import type { DecoderConfig, RopeScaling } from './config.ts';

export function ropeInvFreq(headDim: number, theta: number, scaling: RopeScaling, rotaryDim = headDim): Float64Array {
  const half = rotaryDim / 2;
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) inv[i] = 1 / theta ** ((2 * i) / rotaryDim);
  if (scaling.type === 'linear') for (let i = 0; i < half; i++) inv[i]! /= scaling.factor;
  if (scaling.type === 'llama3') {
    const { factor } = scaling;
    const low = scaling.lowFreqFactor!;
    const high = scaling.highFreqFactor!;
    const old = scaling.originalMaxPositionEmbeddings!;
    const lowWavelen = old / low;
    const highWavelen = old / high;
    for (let i = 0; i < half; i++) {
      const f = inv[i]!;
      const wavelen = (2 * Math.PI) / f;
      if (wavelen > lowWavelen) inv[i] = f / factor;
      else if (wavelen >= highWavelen) {
        const smooth = (old / wavelen - low) / (high - low);
        inv[i] = (1 - smooth) * (f / factor) + smooth * f;
      }
    }
  }
  return inv;
}

/** cos/sin tables [positions, rotaryDim/2] as f32 (computed in f64, as HF does in f32 from the same inv_freq). */
export function ropeTables(invFreq: Float64Array, positions: number): { cos: Float32Array; sin: Float32Array } {
  const half = invFreq.length;
  const cos = new Float32Array(positions * half);
  const sin = new Float32Array(positions * half);
  for (let p = 0; p < positions; p++) {
    for (let i = 0; i < half; i++) {
      // HF computes freqs = position * inv_freq in float32
      const a = Math.fround(p * Math.fround(invFreq[i]!));
      cos[p * half + i] = Math.cos(a);
      sin[p * half + i] = Math.sin(a);
    }
  }
  return { cos, sin };
}

/** The RoPE settings of one layer (Gemma 3 sliding layers use the local base and no scaling). */
export function layerRope(cfg: DecoderConfig, layer: number): { theta: number; scaling: RopeScaling } {
  if (cfg.family === 'gemma3' && cfg.slidingWindow[layer]! > 0) return { theta: cfg.ropeLocalTheta ?? 10000, scaling: { type: 'default', factor: 1 } };
  return { theta: cfg.ropeTheta, scaling: cfg.ropeScaling };
}
