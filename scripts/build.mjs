#!/usr/bin/env node
// build.mjs — builds the native code (cmake-js: addon, libpd3host, native tests, benchmarks) and
// compiles the TypeScript. Run by `npm install` and `npm run build`; incremental after the first run.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args) => {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`build: ${cmd} ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
};

// cmake-js wherever npm put it: this package's node_modules in a clone, the user's (hoisted) when
// the package is installed as a dependency.
const cmakeJs = createRequire(import.meta.url).resolve('cmake-js/bin/cmake-js');
// `compile` configures only when needed, then builds; --parallel uses both cores.
run(process.execPath, [cmakeJs, 'compile', '--parallel', '2']);
const tsc = join(root, 'node_modules', '.bin', 'tsc');
if (existsSync(tsc)) {
  // tsc recompiles everything each time anyway; starting from an empty dist/ means no output of a
  // source file that was moved or deleted lingers there to be imported (or layer-checked) by mistake.
  rmSync(join(root, 'dist'), { recursive: true, force: true, maxRetries: 3 });
  run(tsc, ['-p', 'tsconfig.json']);
} else {
  console.warn('build: typescript not installed (production install); using the shipped dist/');
}
