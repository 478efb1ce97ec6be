/**
 * Run shader-f16 variants on a device without shader-f16 (SwiftShader): Tessera's f16 kernels read and write f16 as
 * packed u32 words (unpack2x16float / pack2x16float) and never `enable f16`, so their WGSL compiles anywhere. This
 * registry view drops `shader-f16` from the variants' requirements so the op-test harness and the contract resolver
 * run them; the real registry still gates them, and the GPU lane runs them unmodified.
 * `registryWithSources` also gives some variants other WGSL text (an f16 twin retyped to i32, which any device
 * compiles), so a test launches the twin through its contract like any kernel.
 */
import type { KernelVariant, Operation, Registry } from '../../src/registry/types.ts';

export function withoutF16Requirement(v: KernelVariant): KernelVariant {
  return { ...v, requires: v.requires.filter((f) => f !== 'shader-f16') };
}

/** A view of `reg` with each variant mapped once by `map` (stable objects: compiled pipelines are cached per variant). */
function mapped(reg: Registry, map: (v: KernelVariant) => KernelVariant): Registry {
  const byId = new Map<string, KernelVariant>();
  const get = (v: KernelVariant) => {
    let m = byId.get(v.id);
    if (!m) byId.set(v.id, (m = map(v)));
    return m;
  };
  const operations = new Map<string, Operation>();
  for (const [name, op] of reg.operations) {
    const variants = new Map<string, KernelVariant>();
    for (const [vn, v] of op.variants) variants.set(vn, get(v));
    operations.set(name, { ...op, variants });
  }
  return { ...reg, operations, variant: (id: string) => get(reg.variant(id)) };
}

export function registryWithoutF16(reg: Registry): Registry {
  return mapped(reg, withoutF16Requirement);
}

/** `registryWithoutF16` where the variants named in `sources` compile the given WGSL instead of their file. */
export function registryWithSources(reg: Registry, sources: Readonly<Record<string, string>>): Registry {
  return mapped(reg, (v) => (v.id in sources ? { ...withoutF16Requirement(v), source: sources[v.id]! } : withoutF16Requirement(v)));
}
