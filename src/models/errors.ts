/** A model folder or file that cannot be used: names the file and the field or tensor, and what to do. */
export class ModelConfigError extends Error {
  constructor(
    readonly file: string,
    readonly field: string,
    detail: string,
  ) {
    super(`${file}: ${field}: ${detail}`);
    this.name = 'ModelConfigError';
  }
}

export class UnsupportedArchitectureError extends Error {
  constructor(
    readonly file: string,
    readonly architecture: string,
    supported: readonly string[],
  ) {
    super(`${file}: architecture "${architecture}" is not supported (supported: ${supported.join(', ')})`);
    this.name = 'UnsupportedArchitectureError';
  }
}

export class MissingTensorError extends Error {
  constructor(
    readonly file: string,
    readonly tensor: string,
    detail = 'is missing',
  ) {
    super(`${file}: tensor "${tensor}" ${detail}`);
    this.name = 'MissingTensorError';
  }
}
