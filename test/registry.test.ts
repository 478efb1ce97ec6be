import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { RegistryError } from '../src/registry/errors.ts';
import { DEFAULT_REGISTRY_PATH, loadRegistry } from '../src/node/registry.ts';
import { parseRegistry } from '../src/registry/parse.ts';
import { packByLayout, resolveContract, validateContract } from '../src/contracts/index.ts';
import { capsFromJson } from '../src/gpu/caps.ts';
import { registryLookup } from '../src/registry/binder.ts';

const raw = () => JSON.parse(readFileSync(DEFAULT_REGISTRY_PATH, 'utf8'));

function expectRegistryError(json: unknown, ...needles: string[]): RegistryError {
  try {
    parseRegistry(json, 'BAD.json');
  } catch (e) {
    expect(e).toBeInstanceOf(RegistryError);
    for (const n of needles) expect((e as Error).message).toContain(n);
    return e as RegistryError;
  }
  throw new Error('expected a RegistryError');
}

describe('kernel registry', () => {
  it('loads all 93 operations and 302 variants from the shipped file', () => {
    const reg = loadRegistry();
    expect(reg.operations.size).toBe(93);
    let n = 0;
    for (const op of reg.operations.values()) n += op.variants.size;
    expect(n).toBe(302);
  });

  it('normalizes rep_penalty (uniform map, unnamed bindings) with warnings, not errors', () => {
    const reg = loadRegistry();
    const v = reg.variant('rep_penalty.default');
    expect(v.uniforms.size).toBe(32);
    expect(v.uniforms.fields.map((f) => [f.name, f.offset])).toContainEqual(['penalty', 8]);
    expect(v.bindings.map((b) => b.name)).toEqual(['uniforms', 'binding1', 'binding2', 'binding3']);
    const w = reg.warnings.filter((x) => x.where.startsWith('rep_penalty'));
    expect(w.map((x) => x.where)).toEqual(['rep_penalty.baseBindings', 'rep_penalty.baseUniforms']);
    expect(reg.warnings.some((x) => x.where === 'lm_head_argmax.phase2_q4k' && /requires/.test(x.message))).toBe(true);
  });

  it('merges bindingsOverride by index and prefers uniformsOverride', () => {
    const reg = loadRegistry();
    const v = reg.variant('scatter_add.dynamic_expert_scale');
    const byIndex = Object.fromEntries(v.bindings.map((b) => [b.index, b.name]));
    expect(byIndex[2]).toBe('routing_indices');
    expect(byIndex[6]).toBe('output');
    expect(byIndex[0]).toBe('uniforms');
    const d = reg.variant('dequant.f32_rowwise');
    expect(d.uniforms.fields.map((f) => f.name)).toEqual(['num_blocks', 'blocks_per_row', 'K', 'rows']);
  });

  it('names unknown kernels with the available variants', () => {
    const reg = loadRegistry();
    expect(() => reg.variant('rmsnorm.nope')).toThrow(/operation rmsnorm has variants: default/);
    expect(() => reg.variant('nope.default')).toThrow(/no operation "nope"/);
  });

  it('rejects a uniform field past size, naming operation and field', () => {
    const j = raw();
    j.operations.softmax.baseUniforms.fields[2].offset = 16;
    expectRegistryError(j, 'softmax.baseUniforms.temperature', 'past the uniform size 16');
  });

  it('rejects overlapping uniform fields in a reachable operation', () => {
    const j = raw();
    j.operations.rmsnorm.baseUniforms.fields[3].offset = 8;
    expectRegistryError(j, 'rmsnorm.baseUniforms', 'overlaps field');
  });

  it('rejects duplicate binding indices, in base bindings and in overrides', () => {
    const j = raw();
    j.operations.residual.baseBindings[2].index = 1;
    expectRegistryError(j, 'residual.baseBindings[1]', 'duplicate binding index 1');
    const k = raw();
    k.operations.scatter_add.variants.dynamic.bindingsOverride.push({ index: 2, name: 'again', type: 'storage' });
    expectRegistryError(k, 'scatter_add.dynamic.bindingsOverride[2]', 'duplicate binding index 2');
  });

  it('rejects an unknown feature name with operation and variant', () => {
    const j = raw();
    j.operations.silu.variants.default.requires = ['shader-f17'];
    expectRegistryError(j, 'silu.default.requires', 'unknown feature name "shader-f17"');
  });

  it('rejects wrong types by schema, naming the path', () => {
    const j = raw();
    j.operations.gather.variants.default.workgroup = [256, 1];
    expectRegistryError(j, 'gather.variants.default.workgroup');
    const k = raw();
    k.operations.rope.baseUniforms.fields[0].type = 'u64';
    expectRegistryError(k, 'rope.baseUniforms');
    const m = raw();
    m.operations.matmul.baseBindings[1].type = 'texture';
    expectRegistryError(m, 'matmul.baseBindings.1.type');
  });

  it('strict mode requires WGSL files to exist', () => {
    const j = raw();
    expect(() => parseRegistry(j, 'R.json', { wgslExists: (f) => f !== 'softmax.wgsl' })).toThrow(
      /softmax\.default\.wgsl: WGSL file "softmax\.wgsl" does not exist/,
    );
  });
});

describe('uniform packer (src/contracts/layout.ts, the only one) on registry layouts', () => {
  const reg = loadRegistry();
  const v = reg.variant('rmsnorm.default');

  it('writes each field by name at the registry offset with its type', () => {
    const { data: buf } = packByLayout(v.uniforms, {
      hidden_size: 257,
      num_tokens: 3,
      eps: 1e-6,
      has_residual: true,
      token_stride: 300,
      output_scale: 0.5,
    });
    const dv = new DataView(buf);
    const off = Object.fromEntries(v.uniforms.fields.map((f) => [f.name, f.offset]));
    expect(dv.getUint32(off.hidden_size!, true)).toBe(257);
    expect(dv.getUint32(off.num_tokens!, true)).toBe(3);
    expect(dv.getFloat32(off.eps!, true)).toBeCloseTo(1e-6, 12);
    expect(dv.getUint32(off.has_residual!, true)).toBe(1);
    expect(dv.getUint32(off.token_stride!, true)).toBe(300);
    expect(dv.getFloat32(off.output_scale!, true)).toBe(0.5);
    expect(buf.byteLength % 16).toBe(0);
  });

  it('rejects unknown, missing and out-of-range fields, naming the field', () => {
    const base = { hidden_size: 1, num_tokens: 1, eps: 1e-5, has_residual: 0, token_stride: 1, output_scale: 1 };
    expect(() => packByLayout(v.uniforms, { ...base, hidden: 3 })).toThrow(/"hidden" is not a uniform field of this kernel/);
    const { eps: _e, ...noEps } = base;
    expect(() => packByLayout(v.uniforms, noEps)).toThrow(/uniform field "eps" \(f32\) has no value/);
    expect(() => packByLayout(v.uniforms, { ...base, num_tokens: -1 })).toThrow(/num_tokens \(u32\) must be an integer in \[0, 4294967295\], got -1/);
    expect(() => packByLayout(v.uniforms, { ...base, num_tokens: 1.5 })).toThrow(/u32\) must be an integer .* got 1\.5/);
  });

  it('refuses to pack an aliased slot (lm_head_select_logits)', () => {
    const s = reg.variant('lm_head_select_logits.f16w_f32a');
    const vals = Object.fromEntries(s.uniforms.fields.filter((f) => !f.name.startsWith('_')).map((f) => [f.name, 1]));
    expect(() => packByLayout(s.uniforms, vals)).toThrow(/share offset 20/);
  });

  it('a contract pass whose uniform value does not fit names the contract, variant, pass and field', () => {
    const c = validateContract({
      name: 'norm',
      inputs: { x: { dtype: 'float32', rank: 2 }, w: { dtype: 'float32', rank: 1 } },
      outputs: { y: { dtype: 'float32', shape: 'shapes.x' } },
      variants: [
        {
          id: 'v',
          priority: 1,
          passes: [
            {
              id: 'norm',
              kernel: 'rmsnorm.default',
              uniforms: { hidden_size: 'dim(shapes.x, 1)', num_tokens: 'dim(shapes.x, 0) - 3', eps: '1e-5', has_residual: '0', token_stride: '0', output_scale: '1' },
              buffers: { input: 'x', weight: 'w', output: 'y', residual: 'x' },
              dispatch: { x: '1' },
            },
          ],
        },
      ],
    });
    const device = capsFromJson(JSON.parse(readFileSync('spec/device-profiles/swiftshader.json', 'utf8')));
    expect(() => resolveContract(c, { shapes: { x: [2, 4], w: [4] }, device, kernels: registryLookup(reg) })).toThrow(
      /norm variant v: pass norm uniform uniforms\.num_tokens.*num_tokens \(u32\) must be an integer .* got -1/,
    );
  });
});
