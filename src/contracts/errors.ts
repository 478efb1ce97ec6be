/** One error class per failure kind; each message names the file/input and how to fix it. */

/** The contract file itself is malformed (schema or cross-reference problem). */
export class ContractSchemaError extends Error {
  override name = 'ContractSchemaError';
  constructor(
    readonly source: string,
    readonly problems: readonly { path: string; message: string }[],
  ) {
    super(
      `${source}: invalid kernel contract (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n` +
        problems.map((p) => `  ${p.path || '(root)'}: ${p.message}`).join('\n'),
    );
  }
}

/** The caller's shapes, dtypes, attributes or tunables don't fit the contract's declarations. */
export class ContractInputError extends Error {
  override name = 'ContractInputError';
  constructor(
    readonly contract: string,
    /** The offending input, attribute or tunable, e.g. `fc1T`, `attribute activation_type`. */
    readonly subject: string,
    detail: string,
  ) {
    super(`${contract}: ${subject}: ${detail}`);
  }
}

export interface Rejection {
  variant: string;
  priority: number;
  /** `requires`: the device lacks a feature/config; `when`: a condition is false; `error`: a condition threw. */
  kind: 'requires' | 'when' | 'error';
  reason: string;
  /** Inputs/attributes the failing clause reads (e.g. `shapes.fc2T`, `attrs.k`). */
  refs: readonly string[];
}

/** No variant of the contract applies to these inputs on this device. */
export class ContractError extends Error {
  override name = 'ContractError';
  constructor(
    readonly contract: string,
    readonly device: string,
    readonly rejected: readonly Rejection[],
    /** Inputs and attributes named by the failing clauses, most relevant first. */
    readonly offending: readonly string[],
  ) {
    super(
      `${contract}: no variant applies to these inputs on device ${device}` +
        (offending.length ? ` (check ${offending.join(', ')})` : '') +
        ':\n' +
        rejected.map((r) => `  - ${r.variant} (priority ${r.priority}): ${r.reason}`).join('\n'),
    );
  }
}

/** A chosen variant could not be turned into a valid plan (dispatch size, uniform value, binding). */
export class ContractPlanError extends Error {
  override name = 'ContractPlanError';
  constructor(
    readonly contract: string,
    readonly variant: string,
    /** e.g. `pass token_chunks[0].fc1_activation_stage dispatch.x`. */
    readonly where: string,
    detail: string,
  ) {
    super(`${contract} variant ${variant}: ${where}: ${detail}`);
  }
}
