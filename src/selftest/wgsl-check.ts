/**
 * Static check of a WGSL file against its registry variant: every registry binding is declared at its index with the
 * registry's name (storage bindings; the uniform variable's name is free) and a matching address space / access mode, no other group-0 binding exists, and the uniform
 * struct has the registry's field names in the registry's order at the registry's offsets (WGSL layout rules).
 * The text is parsed as written (comments stripped); `// #if` sections count as present.
 */
import type { BindingSpec, KernelVariant } from '../registry/types.ts';

export interface WgslBinding {
  group: number;
  binding: number;
  name: string;
  /** 'uniform', 'storage, read', 'storage, read_write' (storage without access mode reads as 'storage, read') */
  space: string;
  type: string;
}

export interface WgslField {
  name: string;
  type: string;
  offset: number;
}

const BINDING = /@group\(\s*(\d+)\s*\)\s*@binding\(\s*(\d+)\s*\)\s*var\s*(?:<([^>]*)>)?\s+([A-Za-z_]\w*)\s*:\s*([^;]+);/g;
const STRUCT = /struct\s+([A-Za-z_]\w*)\s*\{([^}]*)\}/g;

/** Size and alignment of the WGSL types a uniform struct of registry scalars can hold. */
const LAYOUT: Record<string, { size: number; align: number }> = {
  u32: { size: 4, align: 4 },
  i32: { size: 4, align: 4 },
  f32: { size: 4, align: 4 },
  f16: { size: 2, align: 2 },
  'vec2<f32>': { size: 8, align: 8 },
  'vec2<u32>': { size: 8, align: 8 },
  'vec3<f32>': { size: 12, align: 16 },
  'vec3<u32>': { size: 12, align: 16 },
  'vec4<f32>': { size: 16, align: 16 },
  'vec4<u32>': { size: 16, align: 16 },
};

export function stripComments(code: string): string {
  return code.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
}

export function wgslBindings(code: string): WgslBinding[] {
  const out: WgslBinding[] = [];
  for (const m of stripComments(code).matchAll(BINDING)) {
    const space = (m[3] ?? '').replace(/\s+/g, '');
    out.push({
      group: Number(m[1]),
      binding: Number(m[2]),
      name: m[4]!,
      space: space === 'storage' ? 'storage, read' : space.replace(',', ', '),
      type: m[5]!.trim(),
    });
  }
  return out;
}

/** Fields of struct `name` with their WGSL offsets; throws for a type outside LAYOUT or an @align/@size attribute. */
export function wgslStructFields(code: string, name: string): WgslField[] | undefined {
  for (const m of stripComments(code).matchAll(STRUCT)) {
    if (m[1] !== name) continue;
    const fields: WgslField[] = [];
    let offset = 0;
    for (const raw of m[2]!.split(',')) {
      const decl = raw.trim();
      if (!decl) continue;
      if (decl.includes('@')) throw new Error(`struct ${name}: attribute in "${decl}" is not supported by this check`);
      const [fname, ftype] = decl.split(':').map((s) => s.trim().replace(/\s+/g, ''));
      const lay = LAYOUT[ftype!];
      if (!fname || !lay) throw new Error(`struct ${name}: cannot lay out field "${decl}"`);
      offset = Math.ceil(offset / lay.align) * lay.align;
      fields.push({ name: fname, type: ftype!, offset });
      offset += lay.size;
    }
    return fields;
  }
  return undefined;
}

const SPACE_OF: Record<BindingSpec['type'], string> = {
  uniform: 'uniform',
  'read-only-storage': 'storage, read',
  storage: 'storage, read_write',
};

/** Problems (empty when the WGSL agrees with the registry variant). */
export function checkWgslAgainstRegistry(code: string, v: KernelVariant): string[] {
  const problems: string[] = [];
  const decls = wgslBindings(code).filter((b) => b.group === 0);
  const byIndex = new Map(decls.map((b) => [b.binding, b]));
  for (const b of v.bindings) {
    const d = byIndex.get(b.index);
    if (!d) {
      problems.push(`binding ${b.index} "${b.name}" (${b.type}) is not declared`);
      continue;
    }
    // The uniform variable's WGSL name is free (conventionally `u`); a registry binding without a name (normalized to
    // `binding<N>` by the loader) accepts any WGSL name.
    const unnamed = b.name === `binding${b.index}`;
    if (b.type !== 'uniform' && !unnamed && d.name !== b.name) {
      problems.push(`binding ${b.index} is named "${d.name}" in WGSL, "${b.name}" in the registry`);
    }
    if (d.space !== SPACE_OF[b.type]) problems.push(`binding ${b.index} "${b.name}": var<${d.space}> but the registry says ${b.type} (var<${SPACE_OF[b.type]}>)`);
  }
  const known = new Set(v.bindings.map((b) => b.index));
  for (const d of decls) if (!known.has(d.binding)) problems.push(`binding ${d.binding} "${d.name}" is not in the registry`);
  const uni = v.bindings.find((b) => b.type === 'uniform');
  if (uni) {
    const d = byIndex.get(uni.index);
    if (d) {
      let fields: WgslField[] | undefined;
      try {
        fields = wgslStructFields(code, d.type);
      } catch (e) {
        problems.push((e as Error).message);
      }
      if (!fields && !problems.length) problems.push(`uniform binding "${d.name}" has type ${d.type}, not a struct declared in the file`);
      if (fields) {
        const want = v.uniforms.fields.map((f) => `${f.name}:${f.type}@${f.offset}`).join(', ');
        const got = fields.map((f) => `${f.name}:${f.type}@${f.offset}`).join(', ');
        if (want !== got) problems.push(`uniform struct ${d.type} is {${got}}, the registry layout is {${want}}`);
        const end = fields.reduce((m, f) => Math.max(m, f.offset + (LAYOUT[f.type]?.size ?? 0)), 0);
        if (end > v.uniforms.size) problems.push(`uniform struct ${d.type} ends at byte ${end}, past the registry size ${v.uniforms.size}`);
      }
    }
  }
  return problems;
}
