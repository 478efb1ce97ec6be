/** Loading the registry from disk (Node) and the default registry shipped with the package. */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RegistryError } from './errors.ts';
import { parseRegistryText } from './parse.ts';
import type { Registry } from './types.ts';
import { setWgslTextReader } from './binder.ts';

export const DEFAULT_REGISTRY_PATH = fileURLToPath(new URL('../../spec/kernel-registry.json', import.meta.url));
export const KERNELS_DIR = fileURLToPath(new URL('../kernels/', import.meta.url));

export function wgslPath(file: string): string {
  return KERNELS_DIR + file;
}

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

let cached: Registry | undefined;
/** The registry shipped with Tessera (spec/kernel-registry.json), loaded once. */
export function defaultRegistry(): Registry {
  return (cached ??= loadRegistry());
}

const wgslTexts = new Map<string, string | undefined>();
/** The WGSL text of a registry file name under src/kernels/ (undefined when absent), cached. */
export function readWgslSync(file: string): string | undefined {
  if (!wgslTexts.has(file)) wgslTexts.set(file, existsSync(wgslPath(file)) ? readFileSync(wgslPath(file), 'utf8') : undefined);
  return wgslTexts.get(file);
}

// Node: registry lookups read each kernel's WGSL constants from src/kernels by default.
setWgslTextReader(readWgslSync);
