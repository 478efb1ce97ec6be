/**
 * Generic uniform packer: writes fields by name at the registry's offsets. Unknown fields, missing fields and
 * values that do not fit the field's type are errors naming the kernel and the field. Fields whose name starts
 * with `_` (padding) default to 0.
 */
import { KernelBindingError } from './errors.ts';
import type { UniformLayout } from './types.ts';

export type UniformValues = Record<string, number | boolean>;

export function packUniforms(kernel: string, layout: UniformLayout, values: UniformValues): ArrayBuffer {
  const size = Math.max(16, Math.ceil(layout.size / 16) * 16);
  const buf = new ArrayBuffer(size);
  const view = new DataView(buf);
  const known = new Set(layout.fields.map((f) => f.name));
  for (const name of Object.keys(values)) {
    if (!known.has(name)) {
      throw new KernelBindingError(kernel, `unknown uniform field "${name}" (fields: ${[...known].join(', ')})`);
    }
  }
  const written = new Map<number, string>();
  for (const f of layout.fields) {
    const raw = values[f.name];
    if (raw === undefined) {
      if (f.name.startsWith('_')) continue;
      throw new KernelBindingError(kernel, `missing uniform field "${f.name}" (${f.type} at offset ${f.offset})`);
    }
    const prev = written.get(f.offset);
    if (prev !== undefined) {
      throw new KernelBindingError(kernel, `uniform fields "${prev}" and "${f.name}" share offset ${f.offset}; the registry layout is ambiguous`);
    }
    written.set(f.offset, f.name);
    const v = typeof raw === 'boolean' ? (raw ? 1 : 0) : raw;
    switch (f.type) {
      case 'u32':
        if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) {
          throw new KernelBindingError(kernel, `uniform "${f.name}" is u32 but got ${v}`);
        }
        view.setUint32(f.offset, v, true);
        break;
      case 'i32':
        if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) {
          throw new KernelBindingError(kernel, `uniform "${f.name}" is i32 but got ${v}`);
        }
        view.setInt32(f.offset, v, true);
        break;
      case 'f32':
        if (typeof v !== 'number' || Number.isNaN(v)) throw new KernelBindingError(kernel, `uniform "${f.name}" is f32 but got ${v}`);
        view.setFloat32(f.offset, v, true);
        break;
    }
  }
  return buf;
}
