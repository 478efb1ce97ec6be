import { defineConfig } from 'vitest/config';

// GPU tests share one Dawn device per worker process (test/helpers/device.ts), so test files run in the same
// process (isolate: false); SwiftShader is CPU-bound, so keep workers few.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    isolate: false,
    maxWorkers: 2,
    reporters: ['default'],
  },
});
