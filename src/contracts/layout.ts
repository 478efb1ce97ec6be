/**
 * Uniform struct packing with WGSL layout rules for scalar members: u32/i32/f32 are 4 bytes with
 * 4-byte alignment; the struct size is rounded up to 16 (uniform buffer binding granularity).
 * With a registry layout, the registry's offsets and size are used instead (and checked).
 */
import type { ScalarType } from '../registry/types.ts';

/** The one list of uniform scalar types (the registry's): u32, i32, f32. */
export type { ScalarType };

export interface PackedField {
  name: string;
  type: ScalarType;
  offset: number;
  value: number;
}
export interface PackedStruct {
  fields: PackedField[];
  size: number;
  data: ArrayBuffer;
}

/** Thrown with the field name; the plan builder wraps it into a ContractPlanError. */
export class PackError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

const SIZE: Record<ScalarType, number> = { u32: 4, i32: 4, f32: 4 };
const roundUp = (n: number, a: number) => Math.ceil(n / a) * a;

/** Checks a uniform value against its scalar type (booleans become 0/1 for integer fields). */
export function scalar(name: string, type: string, raw: unknown): number {
  const v = typeof raw === 'boolean' && type !== 'f32' ? Number(raw) : raw;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new PackError(name, `${name} (${type}) must be a finite number, got ${JSON.stringify(raw)}`);
  if (type === 'u32' && !(Number.isInteger(v) && v >= 0 && v <= 0xffffffff)) throw new PackError(name, `${name} (u32) must be an integer in [0, 4294967295], got ${v}`);
  if (type === 'i32' && !(Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff)) throw new PackError(name, `${name} (i32) must be an integer in [-2147483648, 2147483647], got ${v}`);
  if (type !== 'u32' && type !== 'i32' && type !== 'f32') throw new PackError(name, `${name}: unsupported uniform type "${type}" (u32, i32, f32)`);
  return v;
}

/** Writes one packed field into a uniform struct's bytes. */
export function write(view: DataView, f: PackedField): void {
  if (f.type === 'u32') view.setUint32(f.offset, f.value, true);
  else if (f.type === 'i32') view.setInt32(f.offset, f.value, true);
  else view.setFloat32(f.offset, f.value, true);
}

/** Packs fields in declaration order with WGSL alignment. */
export function packStruct(fields: readonly { name: string; type: string; value: unknown }[]): PackedStruct {
  let offset = 0;
  const out: PackedField[] = [];
  for (const f of fields) {
    const value = scalar(f.name, f.type, f.value);
    const size = SIZE[f.type as ScalarType];
    offset = roundUp(offset, size);
    out.push({ name: f.name, type: f.type as ScalarType, offset, value });
    offset += size;
  }
  const size = Math.max(16, roundUp(offset, 16));
  const data = new ArrayBuffer(size);
  const view = new DataView(data);
  for (const f of out) write(view, f);
  return { fields: out, size, data };
}

/**
 * Packs values by a registry layout; every layout field needs a value (padding fields, named `_...`, default to 0)
 * and no other names are allowed.
 */
export function packByLayout(
  layout: { size: number; fields: readonly { name: string; type: string; offset: number }[] },
  values: Readonly<Record<string, unknown>>,
): PackedStruct {
  const known = new Set(layout.fields.map((f) => f.name));
  for (const k of Object.keys(values)) {
    if (!known.has(k)) throw new PackError(k, `"${k}" is not a uniform field of this kernel; fields: ${[...known].join(', ')}`);
  }
  const out: PackedField[] = layout.fields.map((f) => {
    if (!(f.name in values) && f.name.startsWith('_')) return { name: f.name, type: f.type as ScalarType, offset: f.offset, value: 0 };
    if (!(f.name in values)) throw new PackError(f.name, `uniform field "${f.name}" (${f.type}) has no value; add it to the pass's "uniforms"`);
    return { name: f.name, type: f.type as ScalarType, offset: f.offset, value: scalar(f.name, f.type, values[f.name]) };
  });
  const byOffset = new Map<number, string>();
  for (const f of out) {
    const other = byOffset.get(f.offset);
    if (other !== undefined) throw new PackError(f.name, `uniform fields "${other}" and "${f.name}" share offset ${f.offset}; the registry layout is ambiguous`);
    byOffset.set(f.offset, f.name);
  }
  const size = Math.max(layout.size, roundUp(Math.max(0, ...out.map((f) => f.offset + 4)), 16));
  const data = new ArrayBuffer(size);
  const view = new DataView(data);
  for (const f of out) write(view, f);
  return { fields: out, size, data };
}
