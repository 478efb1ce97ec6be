/**
 * Pipeline cache keyed by (shader source hash, entry point, override constants, bind group layout).
 * Layouts are explicit (from registry or contract binding lists), so a kernel may declare bindings its
 * entry point leaves unused and still be bound by name.
 */
import { gpuWait } from './wait.ts';
import { modernizeSubgroupMatrix, SGMAT_TEMPLATED_PROBE } from './wgsl-sgmat.ts';
export type BindingKind = 'uniform' | 'storage' | 'read-only-storage';

export interface LayoutEntry {
  binding: number;
  type: BindingKind;
}

export interface PipelineRequest {
  code: string;
  entryPoint: string;
  layout: LayoutEntry[];
  constants?: Record<string, number>;
  /** Deterministic kernel name (`operation.variant`), used as the GPU object label. */
  label: string;
}

/** FNV-1a 64-bit hash of a string, as 16 hex digits. */
export function hashString(s: string): string {
  let h = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  for (let i = 0; i < s.length; i++) {
    h ^= BigInt(s.charCodeAt(i));
    h = (h * prime) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, '0');
}

export class PipelineCache {
  private modules = new Map<string, GPUShaderModule>();
  private pipelines = new Map<string, { pipeline: GPUComputePipeline; layout: GPUBindGroupLayout }>();
  compiled = 0;

  /** Whether this device's WGSL takes subgroup-matrix majorness as a template argument (probed once; see wgsl-sgmat.ts). */
  private sgmatTemplated?: Promise<boolean>;

  constructor(private readonly device: GPUDevice) {}

  private async probeSgmatTemplated(): Promise<boolean> {
    this.device.pushErrorScope('validation');
    const module = this.device.createShaderModule({ code: SGMAT_TEMPLATED_PROBE, label: 'subgroup-matrix spelling probe' });
    const info = await gpuWait(module.getCompilationInfo());
    const scopeErr = await gpuWait(this.device.popErrorScope());
    return !scopeErr && !info.messages.some((m) => m.type === 'error');
  }

  /** The WGSL to compile for a kernel's source: subgroup-matrix calls in the spelling this device prefers. */
  private async codeFor(code: string): Promise<string> {
    if (!code.includes('subgroupMatrix') || !this.device.features.has('chromium-experimental-subgroup-matrix' as GPUFeatureName)) return code;
    this.sgmatTemplated ??= this.probeSgmatTemplated();
    return (await this.sgmatTemplated) ? modernizeSubgroupMatrix(code) : code;
  }

  key(req: PipelineRequest): string {
    const consts = Object.entries(req.constants ?? {})
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const layout = [...req.layout]
      .sort((a, b) => a.binding - b.binding)
      .map((e) => `${e.binding}:${e.type}`)
      .join(',');
    return `${hashString(req.code)}|${req.entryPoint}|${consts}|${layout}`;
  }

  /** Compile (or fetch) a compute pipeline; compilation errors name the kernel and quote the WGSL message. */
  async get(req: PipelineRequest): Promise<{ pipeline: GPUComputePipeline; layout: GPUBindGroupLayout }> {
    const key = this.key(req);
    const hit = this.pipelines.get(key);
    if (hit) return hit;
    const codeHash = hashString(req.code);
    let module = this.modules.get(codeHash);
    if (!module) {
      const code = await this.codeFor(req.code);
      this.device.pushErrorScope('validation');
      module = this.device.createShaderModule({ code, label: req.label });
      const info = await gpuWait(module.getCompilationInfo());
      const scopeErr = await gpuWait(this.device.popErrorScope());
      const errs = info.messages.filter((m) => m.type === 'error');
      if (errs.length || scopeErr) {
        const lines = code.split('\n');
        const detail = errs
          .map((m) => `  line ${m.lineNum}:${m.linePos}: ${m.message}\n    ${lines[m.lineNum - 1]?.trim() ?? ''}`)
          .join('\n');
        throw new ShaderCompileError(req.label, detail || scopeErr!.message);
      }
      this.modules.set(codeHash, module);
    }
    const layout = this.device.createBindGroupLayout({
      label: req.label,
      entries: req.layout.map((e) => ({ binding: e.binding, visibility: 0x4 /* COMPUTE */, buffer: { type: e.type } })),
    });
    // Dawn's node bindings crash on `constants: undefined` and, on SwiftShader, in createComputePipelineAsync after
    // getCompilationInfo; the synchronous call inside a validation error scope is reliable.
    const compute: GPUProgrammableStage = { module, entryPoint: req.entryPoint };
    if (req.constants && Object.keys(req.constants).length) compute.constants = req.constants;
    this.device.pushErrorScope('validation');
    const pipeline = this.device.createComputePipeline({
      label: req.label,
      layout: this.device.createPipelineLayout({ label: req.label, bindGroupLayouts: [layout] }),
      compute,
    });
    const err = await gpuWait(this.device.popErrorScope());
    if (err) throw new ShaderCompileError(req.label, err.message);
    const entry = { pipeline, layout };
    this.pipelines.set(key, entry);
    this.compiled++;
    return entry;
  }
}

export class ShaderCompileError extends Error {
  constructor(
    readonly kernel: string,
    detail: string,
  ) {
    super(`kernel ${kernel}: WGSL failed to compile or its pipeline is invalid:\n${detail}`);
    this.name = 'ShaderCompileError';
  }
}
