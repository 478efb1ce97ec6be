/** Kernel contracts: schema validation, input normalization, variant selection, plans. */
export { ContractSchemaError, ContractInputError, ContractError, ContractPlanError, type Rejection } from './errors.ts';
export { validateContract } from './schema.ts';
export { normalizeInputs, type NormalizedInputs, type TunableValue } from './inputs.ts';
export { resolveContract, deviceLabel, dynamicNames, checkDynamicValue, uniformBytes, writeDynamicFields, type ResolveOptions, type Plan, type PlanPass, type PlanBinding, type PlanIntermediate, type DynamicField } from './plan.ts';
export { compileDynamic, type DynamicExpr } from './dynamic.ts';
export { requirementFailure, conditionFailure, selectionOrder, offendingNames } from './select.ts';
export { packStruct, packByLayout, PackError, type PackedField, type PackedStruct } from './layout.ts';
export { templateContext, shaderContexts, type TemplateContext, type TemplateBinding } from './template.ts';
export * from './types.ts';
export { resolveContractSource, BUNDLED_BASES, type BaseLookup } from './extends.ts';
