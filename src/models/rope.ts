/** RoPE inverse frequencies (default, linear, Llama 3, YaRN) and cos/sin tables, shared by the GPU path and the CPU reference. */
import type { DecoderConfig, RopeScaling } from './config.ts';

/**
 * YaRN (transformers' _compute_yarn_parameters, step by step in f32 as torch does): frequencies below the ramp keep
 * their value (extrapolation), above it are divided by the factor (interpolation), linear in between; the ramp bounds
 * come from beta_fast / beta_slow rotations over original_max_position_embeddings (floored/ceiled when truncate).
 */
function yarnInvFreq(dim: number, base: number, s: RopeScaling): Float64Array {
  const f = Math.fround;
  const half = Math.floor(dim / 2);
  const factor = s.factor;
  const orig = s.originalMaxPositionEmbeddings!;
  const corrDim = (rot: number) => (dim * Math.log(orig / (rot * 2 * Math.PI))) / (2 * Math.log(base));
  let low = corrDim(s.betaFast ?? 32);
  let high = corrDim(s.betaSlow ?? 1);
  if (s.truncate !== false) {
    low = Math.floor(low);
    high = Math.ceil(high);
  }
  low = Math.max(low, 0);
  high = Math.min(high, dim - 1);
  if (low === high) high += 0.001;
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) {
    const posFreq = f(base ** f((2 * i) / dim));
    const extra = f(1 / posFreq);
    const inter = f(1 / f(factor * posFreq));
    const ramp = Math.min(1, Math.max(0, f(f(i - f(low)) / f(high - low))));
    const extraFactor = f(1 - ramp);
    inv[i] = f(f(inter * f(1 - extraFactor)) + f(extra * extraFactor));
  }
  return inv;
}

/** What cos/sin are multiplied by (YaRN's attention factor; 1 otherwise). */
export function ropeAttentionScale(scaling: RopeScaling): number {
  return scaling.type === 'yarn' ? (scaling.attentionFactor ?? 1) : 1;
}

export function ropeInvFreq(headDim: number, theta: number, scaling: RopeScaling, rotaryDim = headDim): Float64Array {
  if (scaling.type === 'yarn') return yarnInvFreq(rotaryDim, theta, scaling);
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

/**
 * cos/sin tables [positions, rotaryDim/2] as f32 (computed in f64, as HF does in f32 from the same inv_freq), times
 * `scale` (YaRN's attention factor, see ropeAttentionScale).
 */
export function ropeTables(invFreq: Float64Array, positions: number, scale = 1): { cos: Float32Array; sin: Float32Array } {
  const half = invFreq.length;
  const cos = new Float32Array(positions * half);
  const sin = new Float32Array(positions * half);
  for (let p = 0; p < positions; p++) {
    for (let i = 0; i < half; i++) {
      // HF computes freqs = position * inv_freq in float32
      const a = Math.fround(p * Math.fround(invFreq[i]!));
      cos[p * half + i] = scale === 1 ? Math.cos(a) : Math.fround(Math.cos(a)) * Math.fround(scale);
      sin[p * half + i] = scale === 1 ? Math.sin(a) : Math.fround(Math.sin(a)) * Math.fround(scale);
    }
  }
  return { cos, sin };
}

/** The RoPE settings of one layer (Gemma 3 sliding layers use the local base and no scaling). */
export function layerRope(cfg: DecoderConfig, layer: number): { theta: number; scaling: RopeScaling } {
  if (cfg.family === 'gemma3' && cfg.slidingWindow[layer]! > 0) return { theta: cfg.ropeLocalTheta ?? 10000, scaling: { type: 'default', factor: 1 } };
  return { theta: cfg.ropeTheta, scaling: cfg.ropeScaling };
}
