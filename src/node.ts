/**
 * The package entry for Node: everything of the core entry (src/index.ts, which imports no Node module), the Node
 * host installed up front (Dawn through the npm `webgpu` package, model files on disk, kernels read from
 * src/kernels), and the Node-only helpers that take file system paths.
 */
import './node/host.ts';

export * from './index.ts';
export { loadRegistry, DEFAULT_REGISTRY_PATH, KERNELS_DIR, wgslPath } from './node/registry.ts';
export { loadContract } from './node/contracts.ts';
export { nodeHost, readKernelFile } from './node/host.ts';
export { diskFile, diskFolder, openPath } from './node/files.ts';
