/**
 * Run shader-f16 variants on a device without shader-f16 (SwiftShader): Tessera's f16 kernels read and write f16 as
 * packed u32 words (unpack2x16float / pack2x16float) and never `enable f16`, so their WGSL compiles anywhere. This
 * registry view drops `shader-f16` from the variants' requirements so the op-test harness and getKernel run them;
 * the real registry still gates them, and the GPU lane runs them unmodified.
 */
import type { KernelVariant, Operation, Registry } from '../../src/registry/types.ts';

export function withoutF16Requirement(v: KernelVariant): KernelVariant {
  return { ...v, requires: v.requires.filter((f) => f !== 'shader-f16') };
}

export function registryWithoutF16(reg: Registry): Registry {
  const operations = new Map<string, Operation>();
  for (const [name, op] of reg.operations) {
    const variants = new Map<string, KernelVariant>();
    for (const [vn, v] of op.variants) variants.set(vn, withoutF16Requirement(v));
    operations.set(name, { ...op, variants });
  }
  return {
    ...reg,
    operations,
    variant(id: string): KernelVariant {
      return withoutF16Requirement(reg.variant(id));
    },
  };
}
