import { defineConfig } from 'vitest/config';

// Tests import the built package (dist/), exactly as users do; scripts/test.mjs builds first.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 30_000,
  },
});
