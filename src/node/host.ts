/**
 * The Node host (src/host.ts): Dawn through the npm `webgpu` package, model files on disk, and kernel sources read
 * from src/kernels on disk (so an edited kernel takes effect without regenerating src/kernels/sources.generated.ts).
 * Importing this module installs it; src/node.ts does, and the core loads it on first use in Node.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as fs from 'node:fs';
import { readConfig, setProcessEnv } from '../config.ts';
import { DEFAULT_DAWN_ARGS, FAST_DAWN_ARGS } from '../gpu/device.ts';
import { setHost, type Host } from '../host.ts';
import { setKernelFileReader } from '../registry/bundled.ts';
import { KERNELS_DIR } from './registry.ts';
import { openPath, writeFile } from './files.ts';

export async function nodeGpu(given: string[] | undefined, checked: boolean): Promise<{ gpu: GPU; dawnArgs: string[]; retry?: () => GPU }> {
  const webgpu = (await import('webgpu')) as unknown as {
    create: (args: string[]) => GPU;
    globals: Record<string, unknown>;
  };
  for (const [k, v] of Object.entries(webgpu.globals)) {
    if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
  }
  const cfg = readConfig();
  const hasSwiftShader = fs.existsSync(cfg.swiftShaderIcd);
  const useSwiftShader = () => setProcessEnv('VK_ICD_FILENAMES', cfg.swiftShaderIcd);
  const safe = given ?? DEFAULT_DAWN_ARGS;
  if (!cfg.vulkanDriverSet && hasSwiftShader && !hasGpuDeviceNode(fs)) {
    // No GPU device node: go straight to SwiftShader (no Vulkan "found no drivers" noise).
    useSwiftShader();
    return { gpu: webgpu.create(safe), dawnArgs: safe };
  }
  const dawnArgs = given ?? (checked ? DEFAULT_DAWN_ARGS : FAST_DAWN_ARGS);
  const gpu = webgpu.create(dawnArgs);
  const retry = !cfg.vulkanDriverSet && hasSwiftShader ? () => (useSwiftShader(), webgpu.create(safe)) : undefined;
  return { gpu, dawnArgs, retry };
}

function hasGpuDeviceNode(fs: typeof import('node:fs')): boolean {
  try {
    if (fs.readdirSync('/dev').some((n) => n.startsWith('nvidia'))) return true;
    return fs.existsSync('/dev/dri') && fs.readdirSync('/dev/dri').some((n) => n.startsWith('renderD'));
  } catch {
    return false;
  }
}


/** Kernel files from src/kernels on disk (undefined when absent). */
export function readKernelFile(file: string): string | undefined {
  const p = KERNELS_DIR + file;
  return existsSync(p) ? readFileSync(p, 'utf8') : undefined;
}

export const nodeHost: Host = { nodeGpu, openPath, writeFile };

setKernelFileReader(readKernelFile);
setHost(nodeHost);
