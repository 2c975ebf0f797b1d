// on-path.ts — finds a system program PD3 does not require (etcd, redis-server, clang, ...) on PATH,
// for the benchmarks and the tests (test/optional-program.ts) that need one.
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The absolute path of an executable `name` on PATH, or null. */
export function findOnPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return null;
}
