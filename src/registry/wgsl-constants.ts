/**
 * Module-scope numeric constants of a WGSL source (`const KMAX: u32 = 128u;`), so contracts read a kernel's
 * constants (`kernel.constants.KMAX`) from the kernel itself instead of repeating them as literals. Only plain
 * literal initializers at the start of a line (module scope) count; expressions are left out.
 */
const CONST_RE = /^const\s+([A-Za-z_]\w*)\s*(?::\s*(?:u32|i32|f32))?\s*=\s*(-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?))[uif]?\s*;/gm;

export function wgslConstants(source: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of source.matchAll(CONST_RE)) {
    const v = Number(m[2]);
    if (Number.isFinite(v)) out[m[1]!] = v;
  }
  return out;
}
