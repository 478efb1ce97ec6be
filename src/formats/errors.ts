/**
 * Errors raised while reading weight files (safetensors, GGUF) and tokenizer files.
 *
 * Every message names the file and, where it applies, the tensor or field, says what is wrong and
 * how to fix it. One class per failure kind so callers can branch with `instanceof`.
 */

export interface FormatErrorInit {
  /** Path of the file (or directory) being read. */
  file: string;
  /** Tensor name, when the problem concerns one tensor. */
  tensor?: string;
  /** Header / metadata field, when the problem concerns one field. */
  field?: string;
  /** What is wrong. */
  problem: string;
  /** How to fix it (optional; a sentence). */
  fix?: string;
}

function compose(init: FormatErrorInit): string {
  const where = [init.file];
  if (init.tensor !== undefined) where.push(`tensor "${init.tensor}"`);
  if (init.field !== undefined) where.push(`field "${init.field}"`);
  return `${where.join(': ')}: ${init.problem}${init.fix ? `. ${init.fix}` : ''}`;
}

/** Base class: a weight or tokenizer file is malformed or cannot be used. */
export class FormatError extends Error {
  readonly file: string;
  readonly tensor?: string;
  readonly field?: string;
  readonly problem: string;

  constructor(init: FormatErrorInit) {
    super(compose(init));
    this.name = new.target.name;
    this.file = init.file;
    this.tensor = init.tensor;
    this.field = init.field;
    this.problem = init.problem;
  }
}

/** The file's structure is invalid (bad header, bad JSON, inconsistent offsets or sizes). */
export class CorruptFileError extends FormatError {}

/** The file ends before the data it declares (usually an interrupted download). */
export class TruncatedFileError extends FormatError {}

/** A file the checkpoint refers to (a shard, tokenizer.json, ...) does not exist. */
export class MissingFileError extends FormatError {}

/** A tensor asked for, or listed in an index, is not present. */
export class TensorNotFoundError extends FormatError {}

/** A dtype / ggml type / tokenizer kind that this runtime does not support. */
export class UnsupportedFormatError extends FormatError {}

/** A chat template failed to render (template error or raise_exception). */
export class ChatTemplateError extends FormatError {}
