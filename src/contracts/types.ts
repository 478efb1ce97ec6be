/** The kernel contract format (spec/kernel-contract.schema.json). Expressions are ExprSource. */
import type { SubgroupMatrixConfig } from '../gpu/caps.ts';
import type { ExprSource } from '../expr/index.ts';

export type { ExprSource };
export type AttributeValue = number | string | boolean | readonly (number | string)[];

export interface ContractInput {
  onnx?: string;
  /** A type-constraint name (e.g. "T") or a concrete dtype. */
  dtype: string;
  /** With a type-constraint dtype: the dtype when the caller gives none and no other input binds the constraint. */
  defaultDtype?: string;
  rank?: number;
  /**
   * An optional input (e.g. an ONNX optional bias) may be left out of a resolve request: it then has no shape,
   * dtype or rank (`has(shapes, "name")` is false), and a pass binding that names it resolves to a tensor
   * binding marked `absent` (the runner binds a placeholder buffer; templates test `has(...)`-derived flags).
   */
  optional?: boolean;
  description?: string;
}
export interface ContractOutput {
  onnx?: string;
  dtype: string;
  shape: ShapeSource;
  description?: string;
}
/** An expression giving a list, or a list of dimension expressions. */
export type ShapeSource = string | readonly ExprSource[];

export interface UniformFieldSpec {
  name: string;
  type: 'u32' | 'i32' | 'f32';
  value: ExprSource;
}
export type BufferAccess = 'storage' | 'read-only-storage';
export interface BindingSpec {
  /** The WGSL variable name (defaults to the binding key). */
  name?: string;
  arg?: string;
  scratch?: string;
  struct?: readonly UniformFieldSpec[];
  buffer?: BufferAccess;
  elementType?: 'f32' | 'f16' | 'u32' | 'i32';
}
export interface DispatchSpec {
  x: ExprSource;
  y?: ExprSource;
  z?: ExprSource;
}
export interface PassSpec {
  id: string;
  name?: string;
  description?: string;
  shader?: string;
  kernel?: string;
  derive?: Readonly<Record<string, ExprSource>>;
  bindings?: readonly (string | BindingSpec)[];
  uniforms?: Readonly<Record<string, ExprSource>>;
  buffers?: Readonly<Record<string, string>>;
  dispatch?: DispatchSpec;
  repeat?: { count: ExprSource; index: string };
  passes?: readonly PassSpec[];
}
export interface IntermediateSpec {
  id: string;
  dtype: string;
  shape: ShapeSource;
  description?: string;
}
export interface VariantRequires {
  features?: readonly string[];
  subgroupMatrixConfigs?: readonly SubgroupMatrixConfig[];
}
export interface VariantSpec {
  id: string;
  priority: number;
  description?: string;
  when?: readonly ExprSource[];
  requires?: VariantRequires;
  derive?: Readonly<Record<string, ExprSource>>;
  intermediates?: readonly IntermediateSpec[];
  passes: readonly PassSpec[];
}
/**
 * A dynamic attribute changes per call (positions, KV lengths, seeds): it may reach uniform fields only, so one
 * plan serves every value; `min`/`max` are static bounds checked on every call.
 */
export type DynamicSpec = boolean | { min?: ExprSource; max?: ExprSource };
export interface AttributeSpec {
  default?: AttributeValue;
  description?: string;
  dynamic?: DynamicSpec;
}
export interface KernelContract {
  $schema?: string;
  domain?: string;
  name: string;
  sinceVersion?: number;
  description?: string;
  inputs: Readonly<Record<string, ContractInput>>;
  outputs: Readonly<Record<string, ContractOutput>>;
  attributes?: Readonly<Record<string, AttributeSpec>>;
  attributeConstraints?: Readonly<Record<string, { values: readonly AttributeValue[] }>>;
  typeConstraints?: Readonly<Record<string, readonly string[]>>;
  tunables?: Readonly<Record<string, { default: number | string | boolean; description?: string }>>;
  derive?: Readonly<Record<string, ExprSource>>;
  bindings?: Readonly<Record<string, BindingSpec>>;
  variants: readonly VariantSpec[];
}

/**
 * What a registry kernel looks like to the resolver (a subset of a registry variant merged with its
 * operation's base bindings/uniforms). Supplied by the caller (src/registry) through `kernels`.
 */
export interface RegistryKernelInfo {
  requires?: readonly string[];
  bindings: readonly { index: number; name: string; type: string }[];
  uniforms?: { size: number; fields: readonly { name: string; type: string; offset: number }[] };
  wgsl?: string;
  entryPoint?: string;
  workgroup?: readonly number[];
  /** Module-scope integer constants of the kernel's WGSL (`const KMAX: u32 = 128u;`), for contract expressions. */
  constants?: Readonly<Record<string, number>>;
}
export type KernelLookup = (kernel: string) => RegistryKernelInfo | undefined;

/** Bytes per element of each dtype name used by contracts (int4/uint4: half a byte). */
export const DTYPE_BYTES: Readonly<Record<string, number>> = {
  float64: 8,
  float32: 4,
  float16: 2,
  bfloat16: 2,
  int64: 8,
  uint64: 8,
  int32: 4,
  uint32: 4,
  int16: 2,
  uint16: 2,
  int8: 1,
  uint8: 1,
  int4: 0.5,
  uint4: 0.5,
  bool: 1,
  // ggml block-quantized weights: bytes per block / elements per block (Q4_K: 144/256, Q6_K: 210/256, Q8_0: 34/32)
  q4_k: 144 / 256,
  q6_k: 210 / 256,
  q8_0: 34 / 32,
};
