/**
 * Chained dispatches: several kernels that would run as dependent dispatches, linked into one WGSL module and run as
 * one dispatch whose workgroups are split into phases, phase k's after phase k - 1's in workgroup order.
 *
 * Why: between dependent dispatches Dawn puts a pipeline barrier, and the GPU drains and ramps up again. For plain
 * reads that costs ~5-7 us a boundary on the H200 (bench/phases.ts); for the decode's own GEMVs, which spend their time
 * in themselves, linking saved ~1 us a boundary (bench/kernels.ts --mlp-link; bench/receipts/README.md, seventeenth
 * session). Inside one dispatch a phase's workgroups start while the last phase's are still running: each issues what
 * does not depend on the last phase (a GEMV's weight loads) and then waits on the last phase's counter.
 *
 * How a part is linked: its module-scope names (structs, functions, constants, variables) get a prefix `c<k>_`, its
 * bindings are renumbered in part order (a buffer range several parts bind, one of them writable, once: see
 * ChainPart.resources), and its entry point `main` becomes a function of the same parameters; the linked entry point
 * calls part k's for workgroups [first_k, first_k + groups_k). A part's own 3-d grid is rebuilt from its index in the
 * phase (workgroup_id, num_workgroups, global_invocation_id).
 *
 * The handshake, through one storage binding `chain_sync` (array<atomic<u32>>, one counter a part, zero before the
 * dispatch): after part k's function returns, the workgroup's writes are fenced (storageBarrier, workgroupBarrier) and
 * lane 0 adds 1 to counter k. Part k > 0 waits for counter k - 1 to reach part k - 1's workgroup count: at the comment
 * `// chain: inputs` in its entry point where the kernel has one (after the loads that do not depend on earlier
 * parts), else before its function runs; lane 0 spins on an atomicLoad, then the workgroup's barrier. The last
 * workgroup of the last part (the one whose add completes its counter) sets every counter back to 0 for the next
 * dispatch: by then every wait of this dispatch has passed. A tail part (ChainPart.tail) has no workgroups of its own:
 * the part before it takes tickets from its counter as its workgroups finish, and those with the last tickets run the
 * tail part (waiting as above for the rest), so no workgroup waits from the dispatch's start.
 *
 * What this relies on beyond WebGPU's guarantees: that a GPU starts workgroups in order (a waiting workgroup never
 * holds back one it waits for), and that plain stores fenced before the counter's add are seen by loads issued after
 * another workgroup sees the count (WGSL has no device-scope fence; every H200 run so far gave the unlinked kernels'
 * outputs to the bit). A part must not load, before its wait, anything an earlier part of the dispatch writes: on the
 * H200 such a load left the old bytes in its SM's L1, where the same address loaded after the wait found them
 * (attention-split-lanes.wgsl.jinja, chainWait). Callers check outputs against the unchained kernels
 * (test/chain.test.ts, the linked decoder cases of test/decoder-fused-variants.test.ts, bench/kernels.ts
 * --mlp-chains with --mlp-link).
 */

import { passEntries, renderPassShader, type GpuTensorRef } from '../contracts/run.ts';
import type { Plan, PlanBinding, PlanPass } from '../contracts/plan.ts';
import { idOf, type BufferBinding } from '../gpu/bindgroups.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import type { DeviceCaps } from '../gpu/caps.ts';
import type { Dispatch } from '../gpu/recorder.ts';

export interface ChainPart {
  /** The part's WGSL (entry point `main`, bindings in group 0 numbered from 0). */
  code: string;
  /** Its dispatch grid. */
  workgroups: readonly [number, number, number];
  /** A name for errors. */
  label: string;
  /**
   * A key for the buffer range of each of its bindings (by index), when some buffer is bound by more than one part:
   * bindings of one key, where any of them is writable, become one read_write binding of the linked module (one
   * dispatch may not bind a buffer twice when either binding is writable). Absent: every binding its own.
   */
  resources?: readonly (string | undefined)[];
  /**
   * Run in the last workgroups to finish the part before (as many as this part's grid holds, at most that part's
   * count), not in workgroups of its own: each of them takes a ticket from the part before's counter as it finishes,
   * and the last tickets run this part, waiting for the rest of that part as any part waits. No workgroup of this part
   * waits from the dispatch's start; only its own count of workgroups ever spins. Not on the first part, nor right
   * after a tail part.
   */
  tail?: boolean;
}

export type ChainBindingType = 'uniform' | 'storage' | 'read-only-storage';

export interface LinkedChain {
  code: string;
  /** Workgroup size shared by every part. */
  workgroupSize: number;
  /**
   * First workgroup and workgroup count of each part, in the linked dispatch (a tail part: those of the part before,
   * whose last `groups` to finish run it).
   */
  phases: { first: number; groups: number }[];
  /** The linked dispatch's grid (x only, or wrapped into y past maxX). */
  workgroups: [number, number, number];
  /**
   * Every binding of the linked module and its layout type: the part and its binding index that brings the
   * resource, or 'sync' for the counters (array<atomic<u32>>, one word a part, zero before the first dispatch).
   */
  bindings: { binding: number; type: ChainBindingType; from: { part: number; index: number } | 'sync' }[];
}

export class ChainLinkError extends Error {
  override name = 'ChainLinkError';
  constructor(label: string, detail: string) {
    super(`chain: ${label}: ${detail}`);
  }
}

type Tok = { kind: 'id' | 'num' | 'punct' | 'space' | 'comment'; text: string };

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  const re = /(\s+)|(\/\/[^\n]*)|(\/\*[\s\S]*?\*\/)|([A-Za-z_][A-Za-z0-9_]*)|(0[xX][0-9a-fA-F]+[iu]?|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?[iuhf]?|\.[0-9]+(?:[eE][+-]?[0-9]+)?[hf]?)|(->|&&|\|\||<<|>>|[<>=!]=|\+=|-=|\*=|\/=|%=|&=|\|=|\^=|[^\s])/gy;
  let m: RegExpExecArray | null;
  while (re.lastIndex < src.length && (m = re.exec(src))) {
    if (m[1]) out.push({ kind: 'space', text: m[1] });
    else if (m[2] || m[3]) out.push({ kind: 'comment', text: m[2] ?? m[3]! });
    else if (m[4]) out.push({ kind: 'id', text: m[4] });
    else if (m[5]) out.push({ kind: 'num', text: m[5] });
    else out.push({ kind: 'punct', text: m[6]! });
  }
  return out;
}

const DECL = new Set(['struct', 'fn', 'var', 'const', 'alias', 'override']);
const BUILTIN_ARG: Record<string, string> = {
  workgroup_id: 'vec3<u32>',
  num_workgroups: 'vec3<u32>',
  local_invocation_index: 'u32',
  local_invocation_id: 'vec3<u32>',
  global_invocation_id: 'vec3<u32>',
  subgroup_id: 'u32',
  num_subgroups: 'u32',
  subgroup_invocation_id: 'u32',
  subgroup_size: 'u32',
};

/** A module-scope resource variable: @group(0) @binding(index) var<space[, access]> name: type; */
interface BindingDecl {
  index: number;
  name: string;
  access: 'uniform' | 'read' | 'read_write';
  type: string;
  /** Token range of the declaration, '@group' .. ';' */
  from: number;
  to: number;
}

/** How part k's bindings land in the linked module. */
interface BindingPlan {
  /** Declared by this part (with its merged binding number, access and type), or dropped for another's. */
  declare?: { binding: number; access: 'uniform' | 'read' | 'read_write'; type: string };
  /** The linked module's name for this binding's variable. */
  name: string;
  /**
   * Its references are `name[i]` of a vector array stored in narrower elements (vec4 as scalars or vec2, vec2 as
   * scalars): read through an accessor `<name>_at(i)` that joins `ratio` consecutive stored elements.
   */
  accessor?: { fn: string; scalar: string; vec: string; target: string; ratio: number };
}

const sigAt = (toks: Tok[], i: number, dir: 1 | -1) => {
  for (let j = i + dir; j >= 0 && j < toks.length; j += dir) if (toks[j]!.kind !== 'space' && toks[j]!.kind !== 'comment') return j;
  return -1;
};

function bindingDecls(toks: Tok[], label: string): BindingDecl[] {
  const out: BindingDecl[] = [];
  for (let i = 0; i < toks.length; i++) {
    if (toks[i]!.text !== '@' || toks[sigAt(toks, i, 1)]?.text !== 'group') continue;
    let at2 = i;
    for (let h = 0; h < 5; h++) at2 = sigAt(toks, at2, 1); // @ group ( 0 ) -> @
    if (toks[at2]?.text !== '@' || toks[sigAt(toks, at2, 1)]?.text !== 'binding') throw new ChainLinkError(label, 'a @group attribute not followed by @binding');
    const num = sigAt(toks, sigAt(toks, sigAt(toks, at2, 1), 1), 1);
    const index = Number(toks[num]!.text.replace(/[iu]$/, ''));
    let j = sigAt(toks, sigAt(toks, num, 1), 1); // var
    if (toks[j]?.text !== 'var') throw new ChainLinkError(label, `binding ${index}: expected var after its attributes`);
    j = sigAt(toks, j, 1); // <
    const words: string[] = [];
    for (j = j + 1; toks[j]!.text !== '>'; j++) if (toks[j]!.kind === 'id') words.push(toks[j]!.text);
    const access = words[0] === 'uniform' ? 'uniform' : words[1] === 'read_write' ? 'read_write' : 'read';
    const nameTok = sigAt(toks, j, 1);
    const colon = sigAt(toks, nameTok, 1);
    let type = '';
    let k = colon + 1;
    for (; toks[k]!.text !== ';'; k++) if (toks[k]!.kind !== 'comment') type += toks[k]!.text;
    out.push({ index, name: toks[nameTok]!.text, access, type: type.replace(/\s+/g, ''), from: i, to: k });
  }
  return out;
}

interface ParsedPart {
  toks: Tok[];
  globals: Set<string>;
  decls: BindingDecl[];
}

function scanPart(part: ChainPart): ParsedPart {
  const toks = tokenize(part.code);
  const globals = new Set<string>();
  let depth = 0;
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    if (t.text === '{') depth++;
    else if (t.text === '}') depth--;
    else if (depth === 0 && t.kind === 'id' && DECL.has(t.text) && toks[sigAt(toks, i, -1)]?.text !== '@') {
      let j = sigAt(toks, i, 1);
      if (t.text === 'var' && toks[j]?.text === '<') {
        while (j >= 0 && toks[j]!.text !== '>') j++;
        j = sigAt(toks, j, 1);
      }
      if (toks[j]?.kind === 'id' && toks[j]!.text !== 'main') globals.add(toks[j]!.text);
    }
  }
  const decls = bindingDecls(toks, part.label);
  const idx = decls.map((d) => d.index).sort((a, b) => a - b);
  idx.forEach((b, i) => {
    if (b !== i) throw new ChainLinkError(part.label, `bindings must be numbered from 0 without gaps (found ${idx.join(', ')})`);
  });
  return { toks, globals, decls };
}

interface EmittedPart {
  directives: string[];
  body: string;
  workgroupSize: number;
  params: { builtin: string; name: string; type: string }[];
  marker: boolean;
}

/** Part k's module text: module-scope names prefixed `c<k>_`, bindings as `plans` says, `main` as `c<k>_main`. */
function emitPart(part: ChainPart, k: number, pp: ParsedPart, plans: Map<number, BindingPlan>): EmittedPart {
  const { toks, globals } = pp;
  const sig = (i: number, dir: 1 | -1) => sigAt(toks, i, dir);
  const p = `c${k}_`;
  const byName = new Map(pp.decls.map((d) => [d.name, plans.get(d.index)!]));
  const declAt = new Map(pp.decls.map((d) => [d.from, d]));
  const directives: string[] = [];
  const params: EmittedPart['params'] = [];
  let workgroupSize = 0;
  let marker = false;
  const out: string[] = [];
  let depth = 0;
  let structDepth = -1; // brace depth of the struct body being read, or -1
  const brackets: boolean[] = []; // open '[': true where it opened an accessor call
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    const decl = declAt.get(i);
    if (decl) {
      const plan = plans.get(decl.index)!;
      if (plan.declare) {
        const space = plan.declare.access === 'uniform' ? 'uniform' : `storage, ${plan.declare.access}`;
        const type = plan.declare.type.replace(/[A-Za-z_][A-Za-z0-9_]*/g, (id) => (globals.has(id) ? p + id : id));
        out.push(`@group(0) @binding(${plan.declare.binding}) var<${space}> ${plan.name}: ${type};`);
      }
      i = decl.to;
      continue;
    }
    if (t.text === '{') {
      depth++;
      out.push(t.text);
      continue;
    }
    if (t.text === '}') {
      if (depth === structDepth) structDepth = -1;
      depth--;
      out.push(t.text);
      continue;
    }
    if (t.text === '[') {
      brackets.push(false);
      out.push(t.text);
      continue;
    }
    if (t.text === ']') {
      out.push(brackets.pop() ? ')' : ']');
      continue;
    }
    // directives (enable / requires / diagnostic at module scope; not the @diagnostic attribute): hoisted to the linked
    // module's top (a global diagnostic then covers every part: it only turns diagnostics off or down)
    if (depth === 0 && t.kind === 'id' && (t.text === 'enable' || t.text === 'requires' || t.text === 'diagnostic') && toks[sig(i, -1)]?.text !== '@') {
      let j = i;
      let s = '';
      while (j < toks.length && toks[j]!.text !== ';') s += toks[j++]!.text;
      directives.push(s.replace(/\s+/g, ' ').trim() + ';');
      i = j;
      continue;
    }
    if (t.kind === 'comment' && /^\/\/\s*chain: inputs\b/.test(t.text)) {
      marker = true;
      if (k > 0) out.push(`c${k}_chain_wait();`);
      continue;
    }
    if (t.text === '@' && toks[sig(i, 1)]?.text === 'compute') {
      // @compute @workgroup_size(X[, 1, 1]) fn main(params) {
      const a = sig(i, 1);
      let j = sig(a, 1);
      if (toks[j]?.text !== '@' || toks[sig(j, 1)]?.text !== 'workgroup_size') throw new ChainLinkError(part.label, 'the entry point has no @workgroup_size right after @compute');
      j = sig(sig(j, 1), 1); // (
      const dims: string[] = [];
      let cur = '';
      for (j = j + 1; toks[j]!.text !== ')'; j++) {
        if (toks[j]!.text === ',') (dims.push(cur.trim()), (cur = ''));
        else cur += toks[j]!.text;
      }
      dims.push(cur.trim());
      const sizes = dims.filter(Boolean).map((d) => Number(d.replace(/u$/, '')));
      if (sizes.some((s) => !Number.isInteger(s)) || sizes.slice(1).some((s) => s !== 1)) throw new ChainLinkError(part.label, `@workgroup_size(${dims.join(', ')}): only a literal x size (y = z = 1) links`);
      workgroupSize = sizes[0]!;
      const fnTok = sig(j, 1);
      const mainTok = sig(fnTok, 1);
      if (toks[fnTok]?.text !== 'fn' || toks[mainTok]?.text !== 'main') throw new ChainLinkError(part.label, 'expected fn main after the entry point attributes');
      // the parameters: @builtin(name) ident: type, ...
      let q = sig(mainTok, 1); // (
      let pdepth = 0;
      let cur2: Tok[] = [];
      const flush = () => {
        const s = cur2.filter((x) => x.kind !== 'space' && x.kind !== 'comment');
        cur2 = [];
        if (!s.length) return;
        if (s[0]!.text !== '@' || s[1]!.text !== 'builtin') throw new ChainLinkError(part.label, 'entry point parameters other than @builtin ones do not link');
        const builtin = s[3]!.text;
        if (!(builtin in BUILTIN_ARG)) throw new ChainLinkError(part.label, `builtin ${builtin} does not link`);
        params.push({ builtin, name: s[5]!.text, type: s.slice(7).map((x) => x.text).join('') });
      };
      for (q = q + 1; q < toks.length; q++) {
        const x = toks[q]!;
        if (x.text === '(' || x.text === '<') pdepth++;
        if ((x.text === ')' || x.text === '>') && pdepth > 0) {
          pdepth--;
          cur2.push(x);
          continue;
        }
        if (x.text === ')' && pdepth === 0) break;
        if (x.text === ',' && pdepth === 0) flush();
        else cur2.push(x);
      }
      flush();
      out.push(`fn ${p}main(${params.map((x) => `${x.name}: ${x.type}`).join(', ')})`);
      i = q;
      continue;
    }
    if (t.kind === 'id') {
      if (depth === 0 && t.text === 'struct' && toks[sig(i, -1)]?.text !== '@') structDepth = depth + 1;
      const prev = toks[sig(i, -1)]?.text;
      const next = sig(i, 1);
      const memberDecl = depth === structDepth && toks[next]?.text === ':' && (prev === '{' || prev === ',');
      if (globals.has(t.text) && prev !== '.' && !memberDecl) {
        const plan = byName.get(t.text);
        if (plan?.accessor) {
          if (toks[next]?.text !== '[') throw new ChainLinkError(part.label, `${t.text} is read as ${plan.accessor.vec} elements of a buffer another part writes as ${plan.accessor.scalar}: only indexing (${t.text}[i]) links`);
          out.push(`${plan.accessor.fn}(`);
          brackets.push(true);
          i = next;
          continue;
        }
        out.push(plan ? plan.name : p + t.text);
        continue;
      }
    }
    out.push(t.text);
  }
  if (!workgroupSize) throw new ChainLinkError(part.label, 'no @compute entry point named main');
  for (const plan of plans.values()) {
    if (plan.accessor) {
      const a = plan.accessor;
      const parts = Array.from({ length: a.ratio }, (_, j) => `${a.target}[b${j ? ` + ${j}u` : ''}]`).join(', ');
      out.push(`\nfn ${a.fn}(i: u32) -> ${a.vec} {\n  let b = ${a.ratio}u * i;\n  return ${a.vec}(${parts});\n}\n`);
    }
  }
  return { directives, body: out.join(''), workgroupSize, params, marker };
}

/** An array binding's element: its scalar type and width (array<vecN<T>> or array<T>, T one of u32 / f32 / i32). */
function elementOf(type: string): { scalar: string; width: number } | undefined {
  const m = /^array<(?:vec([24])<(u32|f32|i32)>|(u32|f32|i32))>$/.exec(type);
  return m ? { scalar: (m[2] ?? m[3])!, width: m[1] ? Number(m[1]) : 1 } : undefined;
}

/** Where every part's bindings go: shared writable resources bound once (see ChainPart.resources). */
function planBindings(parts: readonly ChainPart[], parsed: ParsedPart[]): { plans: Map<number, BindingPlan>[]; bindings: LinkedChain['bindings'] } {
  type Member = { part: number; decl: BindingDecl };
  const groups = new Map<string, Member[]>();
  const groupOf = new Map<BindingDecl, Member[]>();
  parsed.forEach((pp, k) =>
    pp.decls.forEach((decl) => {
      const key = parts[k]!.resources?.[decl.index];
      const g = key === undefined ? `unique:${k}:${decl.index}` : `key:${key}`;
      if (!groups.has(g)) groups.set(g, []);
      groups.get(g)!.push({ part: k, decl });
      groupOf.set(decl, groups.get(g)!);
    }),
  );
  const plans = parsed.map(() => new Map<number, BindingPlan>());
  const bindings: LinkedChain['bindings'] = [];
  // in part order, then binding order: the first member of a group declares it
  const ordered = parsed.flatMap((pp, k) => [...pp.decls].sort((a, b) => a.index - b.index).map((decl) => ({ part: k, decl })));
  const done = new Set<Member[]>();
  for (const m of ordered) {
    const g = groupOf.get(m.decl)!;
    if (done.has(g)) continue;
    done.add(g);
    const shared = g.length > 1 && g.some((x) => x.decl.access === 'read_write');
    const first = g[0]!;
    const name = `c${first.part}_${first.decl.name}`;
    const binding = bindings.length;
    if (!shared) {
      // each member its own binding (read-only sharers may alias)
      for (const x of g) {
        const b = bindings.length;
        plans[x.part]!.set(x.decl.index, { declare: { binding: b, access: x.decl.access, type: x.decl.type }, name: `c${x.part}_${x.decl.name}` });
        bindings.push({ binding: b, type: x.decl.access === 'uniform' ? 'uniform' : x.decl.access === 'read' ? 'read-only-storage' : 'storage', from: { part: x.part, index: x.decl.index } });
      }
      continue;
    }
    if (g.some((x) => x.decl.access === 'uniform')) throw new ChainLinkError(parts[first.part]!.label, `binding ${first.decl.index} (${first.decl.name}) is a uniform and a storage buffer another part writes`);
    // one declaration: where members disagree on the elements' width (vec4, vec2, scalars of one type), the array of
    // the narrowest, which the others read through accessors
    const types = new Set(g.map((x) => x.decl.type));
    let type = first.decl.type;
    if (types.size > 1) {
      const els = g.map((x) => elementOf(x.decl.type));
      if (els.some((e) => e === undefined) || new Set(els.map((e) => e!.scalar)).size > 1)
        throw new ChainLinkError(parts[first.part]!.label, `binding ${first.decl.index} (${first.decl.name}) is shared with bindings of other element types (${[...types].join(', ')})`);
      const narrow = Math.min(...els.map((e) => e!.width));
      type = g[els.findIndex((e) => e!.width === narrow)]!.decl.type;
    }
    const width = elementOf(type)?.width ?? 1;
    for (const x of g) {
      const vec = type !== x.decl.type;
      if (vec && x.decl.access === 'read_write') throw new ChainLinkError(parts[x.part]!.label, `${x.decl.name} writes ${x.decl.type} to a buffer another part declares ${type}: only reads link through the narrower array`);
      plans[x.part]!.set(x.decl.index, {
        ...(x === first ? { declare: { binding, access: 'read_write' as const, type } } : {}),
        name,
        ...(vec
          ? { accessor: { fn: `c${x.part}_${x.decl.name}_at`, scalar: type, vec: x.decl.type.slice('array<'.length, -1), target: name, ratio: elementOf(x.decl.type)!.width / width } }
          : {}),
      });
    }
    bindings.push({ binding, type: 'storage', from: { part: first.part, index: first.decl.index } });
  }
  return { plans, bindings };
}

/**
 * Whether linked chains may wait on this device: the waits need workgroups started in workgroup order, each running
 * until it ends. Measured on NVIDIA (bench/phases.ts on the H200). SwiftShader runs a dispatch's workgroups in strided
 * batches on a few threads, so a waiting workgroup can hold the thread its producer needs (bench/phases.ts hung there
 * at 3,000 workgroups); other adapters are unmeasured.
 */
export function chainsCanWait(caps: DeviceCaps): boolean {
  // the same rule as the derive startsInOrder of src/ops/contracts/bases/gemv-q8a.base.json
  return caps.adapterInfo.vendor === 'nvidia' && caps.adapterInfo.architecture !== 'swiftshader';
}

/**
 * Links `parts` (each a complete kernel module) into one module run as one dispatch (see the file's comment).
 * `waits: false` leaves the waits out (the linking alone, for tests on devices where chainsCanWait is false: run
 * such a module twice and its later parts read what the first run's earlier parts wrote; its counters mean nothing,
 * as an earlier part may add to its counter after the last part reset them).
 */
export function linkChain(parts: readonly ChainPart[], maxX = 65535, opts: { waits?: boolean } = {}): LinkedChain {
  const waits = opts.waits ?? true;
  if (parts.length < 2) throw new ChainLinkError(parts[0]?.label ?? '(none)', 'a chain links two or more parts');
  const scanned = parts.map(scanPart);
  const { plans, bindings } = planBindings(parts, scanned);
  const parsed = parts.map((part, k) => emitPart(part, k, scanned[k]!, plans[k]!));
  const wg = parsed[0]!.workgroupSize;
  for (const [k, pp] of parsed.entries()) {
    if (pp.workgroupSize !== wg) throw new ChainLinkError(parts[k]!.label, `workgroup size ${pp.workgroupSize}, but ${parts[0]!.label}'s is ${wg}: linked parts share one`);
  }
  const phases: LinkedChain['phases'] = [];
  let first = 0;
  for (const [k, part] of parts.entries()) {
    const groups = part.workgroups[0] * part.workgroups[1] * part.workgroups[2];
    if (part.tail) {
      const before = phases[k - 1];
      if (!before || parts[k - 1]!.tail) throw new ChainLinkError(part.label, 'a tail part runs in the workgroups of the part before it: not first, nor after another tail part');
      if (groups > before.groups) throw new ChainLinkError(part.label, `${groups} workgroups as a tail of ${parts[k - 1]!.label}'s ${before.groups}`);
      phases.push({ first: before.first, groups });
      continue;
    }
    phases.push({ first, groups });
    first += groups;
  }
  const total = first;
  const syncBinding = bindings.length;
  bindings.push({ binding: syncBinding, type: 'storage', from: 'sync' });
  const directives = [...new Set(parsed.flatMap((p) => p.directives))];
  const needed = new Set(parsed.flatMap((p) => p.params.map((x) => x.builtin)));
  needed.add('workgroup_id');
  needed.add('num_workgroups');
  needed.add('local_invocation_index');
  if (needed.has('global_invocation_id')) needed.add('local_invocation_id');
  const last = parts.length - 1;
  const lines: string[] = [];
  lines.push(...directives, '');
  lines.push(`// linked by src/program/chain.ts: ${parts.map((p, k) => `part ${k} ${p.label} (workgroups ${phases[k]!.first} .. ${phases[k]!.first + phases[k]!.groups - 1})`).join('; ')}`);
  lines.push(`@group(0) @binding(${syncBinding}) var<storage, read_write> chain_sync: array<atomic<u32>>;`);
  lines.push('var<private> chain_li: u32;');
  if (parts.some((p) => p.tail)) lines.push('var<workgroup> chain_ticket: u32;');
  for (const [k, pp] of parsed.entries()) {
    lines.push('', `// ---- part ${k}: ${parts[k]!.label}`, pp.body.trim());
    if (k > 0) {
      lines.push(
        '',
        `// part ${k} waits until every workgroup of part ${k - 1} has written its outputs`,
        `fn c${k}_chain_wait() {`,
        ...(waits
          ? [`  if (chain_li == 0u) {`, `    loop {`, `      if (atomicLoad(&chain_sync[${k - 1}u]) >= ${phases[k - 1]!.groups}u) { break; }`, `    }`, `  }`, `  workgroupBarrier();`]
          : ['  // (linked with waits off: for tests of the linking alone, on devices that do not start workgroups in order)']),
        `}`,
      );
    }
  }
  const args = [...needed].map((b) => `@builtin(${b}) chain_${b}: ${BUILTIN_ARG[b]}`);
  lines.push('', `@compute @workgroup_size(${wg}, 1, 1)`, `fn main(${args.join(', ')}) {`);
  lines.push('  let g = chain_workgroup_id.x + chain_workgroup_id.y * chain_num_workgroups.x;');
  lines.push('  chain_li = chain_local_invocation_index;');
  lines.push(`  if (g >= ${total}u) { return; }`);
  // part j on its workgroup r of its grid, then its handshake: the add to its counter (a ticket where a tail part
  // follows: that part runs in the workgroups with the last tickets), or the reset by the dispatch's last workgroup
  const runPart = (j: number, r: string, pad: string): void => {
    const pp = parsed[j]!;
    const [X, Y, Z] = parts[j]!.workgroups;
    lines.push(`${pad}let w${j} = vec3<u32>(${r} % ${X}u, (${r} / ${X}u) % ${Y}u, ${r} / ${X * Y}u);`);
    if (j > 0 && !pp.marker) lines.push(`${pad}c${j}_chain_wait();`);
    const callArgs = pp.params.map((x) => {
      if (x.builtin === 'workgroup_id') return `w${j}`;
      if (x.builtin === 'num_workgroups') return `vec3<u32>(${X}u, ${Y}u, ${Z}u)`;
      if (x.builtin === 'global_invocation_id') return `w${j} * vec3<u32>(${wg}u, 1u, 1u) + chain_local_invocation_id`;
      return `chain_${x.builtin}`;
    });
    lines.push(`${pad}c${j}_main(${callArgs.join(', ')});`);
    lines.push(`${pad}storageBarrier();`, `${pad}workgroupBarrier();`);
    const tail = j < last && parts[j + 1]!.tail;
    if (tail) {
      const ahead = phases[j]!.groups - phases[j + 1]!.groups;
      lines.push(`${pad}if (chain_li == 0u) {`, `${pad}  chain_ticket = atomicAdd(&chain_sync[${j}u], 1u);`, `${pad}}`);
      lines.push(`${pad}// the last ${phases[j + 1]!.groups} workgroups of part ${j} to finish run part ${j + 1}`);
      lines.push(`${pad}let t${j} = workgroupUniformLoad(&chain_ticket);`, `${pad}if (t${j} >= ${ahead}u) {`);
      runPart(j + 1, `(t${j} - ${ahead}u)`, pad + '  ');
      lines.push(`${pad}}`);
      return;
    }
    lines.push(`${pad}if (chain_li == 0u) {`);
    if (j !== last) lines.push(`${pad}  _ = atomicAdd(&chain_sync[${j}u], 1u);`);
    else {
      lines.push(`${pad}  let c = atomicAdd(&chain_sync[${j}u], 1u);`);
      lines.push(`${pad}  if (c == ${phases[j]!.groups - 1}u) {`, `${pad}    // the dispatch's last workgroup: every wait has passed; the counters start at 0 for the next one`);
      for (let i = 0; i <= last; i++) lines.push(`${pad}    atomicStore(&chain_sync[${i}u], 0u);`);
      lines.push(`${pad}  }`);
    }
    lines.push(`${pad}}`);
  };
  const own = parts.flatMap((p, k) => (p.tail ? [] : [k]));
  for (const [i, k] of own.entries()) {
    const ph = phases[k]!;
    const cond = i === own.length - 1 ? '' : `if (g < ${ph.first + ph.groups}u) `;
    lines.push(`  ${i === 0 ? '' : 'else '}${cond}{`);
    runPart(k, `(g - ${ph.first}u)`, '    ');
    lines.push('  }');
  }
  lines.push('}', '');
  const x = Math.min(total, maxX);
  return { code: lines.join('\n'), workgroupSize: wg, phases, workgroups: [x, Math.ceil(total / x), 1], bindings };
}

/** One op call of a chain: its resolved plan (one templated pass) and its tensors' buffers. */
export interface ChainCall {
  plan: Plan;
  tensors: Readonly<Record<string, GpuTensorRef>>;
  /** The buffer range of each uniform binding of the pass (its bytes written by the caller). */
  uniform(pass: PlanPass, b: Extract<PlanBinding, { kind: 'uniform' }>): { buffer: GPUBuffer; offset: number; size: number };
}

/**
 * The calls linked into one dispatch (each plan's single pass rendered from its template; see linkChain), bound to
 * their buffers and to `sync` (the counters: zeroed, at least calls.length words, for this chain alone or for chains
 * that never run at once). Plans with intermediates or several passes do not link.
 */
export async function linkCalls(dev: TesseraDevice, calls: readonly ChainCall[], sync: GPUBuffer, label: string, opts: { waits?: boolean; tail?: boolean } = {}): Promise<{ dispatch: Dispatch; linked: LinkedChain }> {
  const entries: BufferBinding[][] = [];
  const parts: ChainPart[] = calls.map((c, k) => {
    const pass = c.plan.passes[0];
    const name = `${c.plan.contract} [${c.plan.variant}]`;
    if (c.plan.passes.length !== 1 || !pass || pass.kernel || c.plan.intermediates.length) throw new ChainLinkError(name, 'only a plan of one templated pass and no intermediates links');
    const e = passEntries(dev, c.plan, pass, { tensors: c.tensors, scratch: new Map(), uniform: c.uniform });
    entries.push(e);
    const resources: (string | undefined)[] = [];
    for (const x of e) resources[x.binding] = `${idOf(x.buffer)}:${x.offset ?? 0}:${x.size ?? x.buffer.size - (x.offset ?? 0)}`;
    return { code: renderPassShader(c.plan, pass), workgroups: pass.dispatch, label: name, resources, ...(opts.tail && k === calls.length - 1 ? { tail: true } : {}) };
  });
  const linked = linkChain(parts, dev.caps.limits.maxComputeWorkgroupsPerDimension, opts);
  const { pipeline, layout } = await dev.pipelines.get({ code: linked.code, entryPoint: 'main', layout: linked.bindings.map(({ binding, type }) => ({ binding, type })), label });
  const bound: BufferBinding[] = linked.bindings.map((b) => {
    const from = b.from;
    if (from === 'sync') return { binding: b.binding, buffer: sync };
    const e = entries[from.part]!.find((x) => x.binding === from.index)!;
    return { ...e, binding: b.binding };
  });
  return { dispatch: { label, pipeline, bindGroup: dev.bindGroups.get(layout, bound, label), workgroups: linked.workgroups }, linked };
}
