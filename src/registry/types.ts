/** The normalized in-memory model of the kernel registry. */
import type { BindingKind } from '../gpu/pipelines.ts';

export type ScalarType = 'u32' | 'i32' | 'f32';

export interface BindingSpec {
  index: number;
  name: string;
  type: BindingKind;
}

export interface UniformField {
  name: string;
  type: ScalarType;
  offset: number;
}

export interface UniformLayout {
  size: number;
  fields: UniformField[];
}

export type ReachabilityStatus = 'pinned' | 'model-selectable' | 'selectable' | 'unused';

export interface KernelVariant {
  /** `operation.variant`: cache key, GPU object label, the name errors and profiles use. */
  id: string;
  operation: string;
  name: string;
  wgsl: string;
  entryPoint: string;
  workgroup: [number, number, number];
  requires: string[];
  description?: string;
  outputDtype?: string;
  inputDtype?: string;
  weightDtype?: string;
  metadata: Record<string, unknown>;
  /** Base bindings with bindingsOverride merged by index, sorted by index. */
  bindings: BindingSpec[];
  /** uniformsOverride when present, else the operation's base uniforms. */
  uniforms: UniformLayout;
  /** WGSL pipeline-overridable constants (`wgslOverrides`). */
  overrides: Record<string, number>;
  /**
   * WGSL text compiled instead of reading `wgsl` (never set by the registry file: registry views in tests use it,
   * e.g. an f16 twin retyped to run on a device without shader-f16).
   */
  source?: string;
  reachability: { status: ReachabilityStatus; inlineConfigs: string[]; ruleChains: string[]; wgslOnDisk: boolean };
}

export interface Operation {
  name: string;
  description: string;
  bindings: BindingSpec[];
  uniforms: UniformLayout;
  variants: Map<string, KernelVariant>;
}

export interface LintMessage {
  level: 'error' | 'warning';
  /** Where: `operation`, `operation.variant`, optionally with a field path. */
  where: string;
  message: string;
}

export interface Registry {
  file: string;
  version: string;
  operations: Map<string, Operation>;
  /** Irregularities found while normalizing (warnings). */
  warnings: LintMessage[];
  variant(id: string): KernelVariant;
}
