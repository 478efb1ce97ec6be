/**
 * Reading a contract file (Node). Op contracts shipped with Tessera come bundled (src/ops/runner.ts opContract);
 * this reads any other contract file by path. It is reachable from the core barrel (contracts/index.ts), so it takes
 * node:fs from the running process (process.getBuiltinModule, Node >= 20.16) instead of importing it: a browser
 * bundle carries no Node module and gets a clear error here (validate parsed JSON with validateContract instead).
 */
import { ContractSchemaError } from './errors.ts';
import { bundledLookup, type BaseLookup } from './extends.ts';
import { validateContract } from './schema.ts';
import type { KernelContract } from './types.ts';

function readTextFile(file: string): string {
  const fs = typeof process !== 'undefined' ? (process.getBuiltinModule?.('node:fs') as typeof import('node:fs') | undefined) : undefined;
  if (!fs) throw new Error('reading a file needs Node.js >= 20.16; in a browser, pass the parsed JSON to validateContract');
  return fs.readFileSync(file, 'utf8');
}

/** Reads, parses and validates a contract file. */
export function loadContract(file: string): KernelContract {
  let text: string;
  try {
    text = readTextFile(file);
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
      text = readTextFile(path);
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
