import { defineConfig } from 'vitest/config';

// GPU tests share one Dawn instance per worker; SwiftShader is CPU-bound, so keep workers few.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
