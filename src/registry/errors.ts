import type { LintMessage } from './types.ts';

/** A registry that cannot be used: schema violations or inconsistent layouts, each naming operation, variant and field. */
export class RegistryError extends Error {
  constructor(
    readonly file: string,
    readonly problems: LintMessage[],
  ) {
    const list = problems.map((p) => `  ${p.where}: ${p.message}`).join('\n');
    super(`kernel registry ${file} is invalid (${problems.length} error${problems.length === 1 ? '' : 's'}):\n${list}`);
    this.name = 'RegistryError';
  }
}

/** A kernel name that the registry does not define. */
export class UnknownKernelError extends Error {
  constructor(id: string, hint: string) {
    super(`unknown kernel "${id}": ${hint}`);
    this.name = 'UnknownKernelError';
  }
}

/** Wrong buffers or uniform values given to a registry kernel. */
export class KernelBindingError extends Error {
  constructor(kernel: string, detail: string) {
    super(`kernel ${kernel}: ${detail}`);
    this.name = 'KernelBindingError';
  }
}
