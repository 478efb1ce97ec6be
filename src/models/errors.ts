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

/** The layer count in the config disagrees with the layers the weights hold (missing or extra layers). */
export class LayerCountError extends Error {
  constructor(
    readonly file: string,
    readonly field: string,
    detail: string,
  ) {
    super(`${file}: ${field}: ${detail}`);
    this.name = 'LayerCountError';
  }
}

/** Text was given (a prompt, a chat) to a model that has no tokenizer: names the missing file and the alternative. */
export class MissingTokenizerError extends Error {
  constructor(
    readonly file: string,
    what: string,
  ) {
    super(`${file} does not exist: ${what} needs a tokenizer to turn text into token ids; pass token ids instead (--ids 1,2,3), or add tokenizer.json to the model folder`);
    this.name = 'MissingTokenizerError';
  }
}

/** A token id that is not a decimal integer in 0..vocab_size-1; names where it came from, the value and the range. */
export class TokenIdError extends Error {
  constructor(
    readonly where: string,
    readonly value: string,
    detail: string,
  ) {
    super(`${where}: ${detail}`);
    this.name = 'TokenIdError';
  }
}
