/** Shared fixtures for the contract tests: the QMoE contract, device profiles, gpt-oss-like shapes. */
import { readFileSync } from 'node:fs';
import { capsFromJson, type DeviceCaps, type DeviceProfileJson } from '../src/gpu/caps.ts';
import { resolveContract, type Plan, type ResolveOptions } from '../src/contracts/index.ts';
import { loadContract } from '../src/node/contracts.ts';

export const QMOE_PATH = new URL('../spec/qmoe.contract.json', import.meta.url).pathname;
export const PROFILE = (name: string) => new URL(`../spec/device-profiles/${name}.json`, import.meta.url).pathname;
export const qmoe = loadContract(QMOE_PATH);

export function profileJson(name: 'swiftshader' | 'nvidia-h200'): DeviceProfileJson {
  return JSON.parse(readFileSync(PROFILE(name), 'utf8')) as DeviceProfileJson;
}
export const swiftshader: DeviceCaps = capsFromJson(profileJson('swiftshader'));
export const h200: DeviceCaps = capsFromJson(profileJson('nvidia-h200'));

/** A profile edited by `edit` (features as an array). */
export function editedProfile(name: 'swiftshader' | 'nvidia-h200', edit: (p: DeviceProfileJson) => void): DeviceCaps {
  const p = profileJson(name);
  edit(p);
  return capsFromJson(p);
}

export interface MoeDims {
  hidden?: number;
  inter?: number;
  experts?: number;
  bits?: 4 | 8;
  swiglu?: boolean;
  blockSize?: number;
}

/**
 * Shapes the QMoE derive rules accept: fc1T [E, fusionSize*inter, hidden/packSize],
 * fc2T [E, hidden, inter/packSize], scales [E, rows] per row or [E, rows, cols/blockSize] block-wise.
 * gpt-oss-20b-like defaults: hidden 2880, inter 2880, 32 experts, 4-bit, SwiGLU fused.
 */
export function moeShapes(tokens: number, d: MoeDims = {}): Record<string, number[]> {
  const { hidden = 2880, inter = 2880, experts = 32, bits = 4, swiglu = true, blockSize } = d;
  const pack = bits === 4 ? 2 : 1;
  const rows1 = (swiglu ? 2 : 1) * inter;
  return {
    inputT: [tokens, hidden],
    routerT: [tokens, experts],
    fc1T: [experts, rows1, hidden / pack],
    fc1ScalesT: blockSize ? [experts, rows1, hidden / blockSize] : [experts, rows1],
    fc2T: [experts, hidden, inter / pack],
    fc2ScalesT: blockSize ? [experts, hidden, inter / blockSize] : [experts, hidden],
  };
}

export const gptOssAttrs = { k: 4, activation_type: 'swiglu', swiglu_fusion: 1 } as const;

export function plan(tokens: number, device: DeviceCaps, extra: Partial<ResolveOptions> = {}): Plan {
  return resolveContract(qmoe, { shapes: moeShapes(tokens), attributes: { ...gptOssAttrs }, device, source: 'spec/qmoe.contract.json', ...extra });
}

export function caught<T extends Error>(fn: () => unknown, cls: new (...a: never[]) => T): T {
  try {
    fn();
  } catch (e) {
    if (e instanceof cls) return e;
    throw e;
  }
  throw new Error(`expected ${cls.name}`);
}
