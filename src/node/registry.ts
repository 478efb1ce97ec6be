/**
 * Node only: loading a registry file from disk, and where the shipped registry and kernels lie in this checkout.
 * The shipped registry and kernel sources for every platform are in src/registry/bundled.ts (re-exported here for
 * Node code).
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RegistryError } from '../registry/errors.ts';
import { parseRegistryText } from '../registry/parse.ts';
import type { Registry } from '../registry/types.ts';

export { defaultRegistry, readWgslSync } from '../registry/bundled.ts';

export const DEFAULT_REGISTRY_PATH = fileURLToPath(new URL('../../spec/kernel-registry.json', import.meta.url));
export const KERNELS_DIR = fileURLToPath(new URL('../kernels/', import.meta.url));

export function wgslPath(file: string): string {
  return KERNELS_DIR + file;
}

/** Whether a kernel file exists on disk under src/kernels. */
export function wgslExists(file: string): boolean {
  return existsSync(wgslPath(file));
}

export function loadRegistry(path = DEFAULT_REGISTRY_PATH, opts: { strict?: boolean } = {}): Registry {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new RegistryError(path, [{ level: 'error', where: '(file)', message: `cannot read: ${(e as Error).message}` }]);
  }
  return parseRegistryText(text, path, opts.strict ? { wgslExists } : {});
}
