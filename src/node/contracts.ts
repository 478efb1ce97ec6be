/**
 * Node only: reading a contract file by path. Op contracts shipped with Tessera come bundled (src/ops/runner.ts
 * opContract); this reads any other contract file, and the bases its "extends" names from files next to it. In a
 * browser, pass the parsed JSON to validateContract (src/contracts/schema.ts), whose bases default to the bundled ones.
 */
import { readFileSync } from 'node:fs';
import { ContractSchemaError } from '../contracts/errors.ts';
import { bundledLookup, type BaseLookup } from '../contracts/extends.ts';
import { validateContract } from '../contracts/schema.ts';
import type { KernelContract } from '../contracts/types.ts';

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
  return validateContract(json, file, fileLookup(file));
}

/** Bases of `file`'s "extends": a file next to it (or a path relative to it), else a bundled base. */
function fileLookup(file: string): BaseLookup {
  const dir = file.includes('/') || file.includes('\\') ? file.replace(/[\\/][^\\/]*$/, '') : '.';
  return (name) => {
    const path = /^([A-Za-z]:)?[\\/]/.test(name) ? name : `${dir}/${name}`;
    let text: string | undefined;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      return bundledLookup(name);
    }
    try {
      return { json: JSON.parse(text) as unknown, source: path, lookup: fileLookup(path) };
    } catch (e) {
      throw new ContractSchemaError(file, [{ path: 'extends', message: `${path} is not valid JSON: ${(e as Error).message}` }]);
    }
  };
}
