import { defineConfig } from 'vitest/config';

// GPU test files get their device from test/helpers/device.ts (one per worker process); SwiftShader is CPU-bound,
// so keep workers few.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The Node host (src/node/host.ts) before any test module: kernels are read from src/kernels on disk.
    setupFiles: ['test/setup-node.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
