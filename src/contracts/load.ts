/** Reading a contract file from disk (Node). */
import { readFileSync } from 'node:fs';
import { ContractSchemaError } from './errors.ts';
import { validateContract } from './schema.ts';
import type { KernelContract } from './types.ts';

/** Reads, parses and validates a contract file. */
export function loadContract(file: string): KernelContract {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ContractSchemaError(file, [{ path: '', message: `cannot read file: ${(e as Error).message}` }]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ContractSchemaError(file, [{ path: '', message: `not valid JSON: ${(e as Error).message}` }]);
  }
  return validateContract(json, file);
}
