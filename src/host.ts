/**
 * What the core needs from its host that is not a Web API, behind one small interface: Node fills it
 * (src/node/host.ts: Dawn through the npm `webgpu` package, files on disk); a page needs none of it (navigator.gpu,
 * bundled kernels, model bytes from URL/File sources). The core imports no Node module: in Node, the host module is
 * loaded on first use through a computed specifier that bundlers leave alone, or installed up front by src/node.ts.
 */
import type { ModelFiles } from './formats/files.ts';

export interface NodeGpu {
  gpu: GPU;
  dawnArgs: string[];
  /** A second instance on SwiftShader when the first found no adapter. */
  retry?: () => GPU;
}

export interface Host {
  /** A WebGPU entry point from Dawn: `given` Dawn options, else the checked or fast defaults. */
  nodeGpu(given: string[] | undefined, checked: boolean): Promise<NodeGpu>;
  /** What is at a file system path: a folder, or one file with its folder; undefined when nothing is there. */
  openPath(path: string): Promise<ModelFiles | undefined>;
  /** Writes a file (GGUF and safetensors writers). */
  writeFile(path: string, bytes: Uint8Array): Promise<void>;
}

let host: Host | undefined;

/** Installs the host (src/node/host.ts does on import). */
export function setHost(h: Host): void {
  host = h;
}

const isNode = () => typeof process !== 'undefined' && !!process.versions?.node;

// Relative to this file; a variable so bundlers neither follow nor inline it (browser bundles never reach it).
const NODE_HOST_MODULE = './node/host.ts';

/** The host, loading the Node one on first use in Node; throws where there is none (a browser page). */
export async function getHost(what: string): Promise<Host> {
  if (host) return host;
  if (!isNode()) throw new Error(`${what} needs Node.js (file system paths, Dawn); in a browser, pass a URL or File source`);
  await import(/* @vite-ignore */ NODE_HOST_MODULE);
  if (!host) throw new Error(`${NODE_HOST_MODULE} did not install the Node host`);
  return host;
}
