#!/usr/bin/env node
// build.mjs — builds the native code (cmake-js: addon, libpd3host, native tests, benchmarks) and
// compiles the TypeScript. Run by `npm install` and `npm run build`; incremental after the first run.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, readFileSync, rmSync } from 'node:fs';
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
// `compile` configures only when the build directory is new, then builds; --parallel uses both cores.
// A configure that found no libdpdk or abseil stays that way in CMake's cache, so an optional package
// installed since would never be picked up: configure again (about a second) while one is missing.
const cache = join(root, 'build', 'CMakeCache.txt');
if (existsSync(cache) && optionalDependencyMissing(readFileSync(cache, 'utf8'))) run('cmake', [join(root, 'build')]);
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

/** Whether CMake's cache records an optional build dependency (CMakeLists.txt) as not found. */
function optionalDependencyMissing(cacheText) {
  const dpdkFound = /^DPDK_FOUND:INTERNAL=1$/m.test(cacheText);
  const abslFound = /^absl_DIR:PATH=(?!.*NOTFOUND).+$/m.test(cacheText);
  return !dpdkFound || !abslFound;
}
