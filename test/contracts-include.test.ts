/**
 * `{% include "name" %}` in kernel templates (src/contracts/run.ts expandIncludes): the included file's text in
 * place of the directive, nested includes, and errors that name the file and the chain; the op templates that share
 * the Q4_K header decode (q4k-scales.inc.wgsl.jinja) render with it once.
 */
import { describe, expect, it } from 'vitest';
import { expandIncludes, loadShaderFile, renderPassShader, ShaderTemplateError } from '../src/contracts/run.ts';
import { resolveContract } from '../src/contracts/index.ts';
import { opContract } from '../src/ops/runner.ts';
import { h200 } from './contracts-helpers.ts';

const files: Record<string, string> = {
  'main.wgsl.jinja': 'a\n{% include "one.inc" %}\nb\n',
  'one.inc': '// one\n{% include "two.inc" %}\nx = 1;\n',
  'two.inc': 'two\n',
  'loop.inc': '{% include "loop2.inc" %}\n',
  'loop2.inc': '{% include "loop.inc" %}\n',
  'missing.wgsl.jinja': 'a\n{% include "nope.inc" %}\n',
};
const load = (name: string) => {
  const text = files[name];
  if (text === undefined) throw new ShaderTemplateError(name, 'not found');
  return text;
};

describe('template includes', () => {
  it('replaces each directive by the file (its final newline dropped), nested ones too', () => {
    expect(expandIncludes(files['main.wgsl.jinja']!, 'main.wgsl.jinja', load)).toBe('a\n// one\ntwo\nx = 1;\nb\n');
  });

  it('leaves a template without directives as it is, and a whitespace-controlled one to jinja (which refuses it)', () => {
    expect(expandIncludes('fn f() {}\n{{ x }}\n', 't', load)).toBe('fn f() {}\n{{ x }}\n');
    expect(expandIncludes('{%- include "two.inc" %}', 't', load)).toBe('{%- include "two.inc" %}');
  });

  it('refuses a cycle, naming the chain', () => {
    expect(() => expandIncludes('{% include "loop.inc" %}', 'top.wgsl.jinja', load)).toThrow(/top\.wgsl\.jinja: include cycle: top\.wgsl\.jinja -> loop\.inc -> loop2\.inc -> loop\.inc/);
  });

  it('names the including file and the missing one', () => {
    expect(() => expandIncludes(files['missing.wgsl.jinja']!, 'missing.wgsl.jinja', load)).toThrow(/shader template missing\.wgsl\.jinja: include "nope\.inc": .*not found/);
  });

  it('finds included files where pass shaders are found (bundled kernel sources)', () => {
    const text = expandIncludes(loadShaderFile('gemv-q8a.wgsl.jinja'), 'gemv-q8a.wgsl.jinja');
    expect(text).not.toMatch(/\{%-?\s*include/);
    expect(text.split('fn scales(hdr: vec4<u32>, g: u32)').length).toBe(2);
    expect(text).toContain(loadShaderFile('q4k-scales.inc.wgsl.jinja').trimEnd());
  });

  it('renders the Q4_K GEMV and attention_oproj with the shared header decode once', () => {
    const gemv = resolveContract(opContract('linear_q8'), { shapes: { xq: [1, 1024], xm: [1, 768], w: [4096, 4096], y: [1, 4096] }, dtypes: { w: 'q4_k', xq: 'uint32' }, device: h200 });
    const aop = resolveContract(opContract('attention_oproj'), {
      shapes: { q: [1, 32, 128], k: [256, 8, 128], v: [256, 8, 128], w: [4096, 4096], y: [1, 4096], ng: [4096], nq: [1, 1024], nm: [1, 768], sync: [32] },
      dtypes: { k: 'float16', v: 'float16', w: 'q4_k', nq: 'uint32', sync: 'uint32' },
      attributes: { kv_len: 101, sync_base: 16 },
      tunables: { attnOproj: 'on' },
      device: h200,
    });
    expect(aop.variant).toBe('pairs');
    for (const plan of [gemv, aop]) {
      const src = renderPassShader(plan, plan.passes.find((p) => p.shader)!);
      expect(src.split('fn scales(hdr: vec4<u32>, g: u32)').length, plan.variant).toBe(2);
      expect(src, plan.variant).toContain('scw = (hdr.w & 0x0f0f0f0fu) | ((hdr.y >> 2u) & 0x30303030u);');
    }
  });
});
