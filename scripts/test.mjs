#!/usr/bin/env node
// test.mjs — `npm test`: build, run the native test binary, run vitest, and print one closing line
// "tests: N passed, N failed, N skipped" that sums both, after one line per reason a test skipped
// (a missing optional program: test/optional-program.ts). Exits non-zero if anything failed or
// nothing ran.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);

const build = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

// Tests write only to temporary directories: what the checkout holds (outside the build outputs) is
// listed before and after, and any file a test created, changed or removed fails the run.
const OUTPUTS = new Set(['.git', 'node_modules', 'build', 'dist']);
function snapshot(dir = root, into = new Map()) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (dir === root && (OUTPUTS.has(entry.name) || entry.name.startsWith('build-'))) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) snapshot(path, into);
    else if (entry.isFile()) {
      const st = statSync(path);
      into.set(relative(root, path), `${st.size}:${st.mtimeMs}`);
    }
  }
  return into;
}
const before = snapshot();

// Nor may they leave anything behind: the pd3-* entries of the temporary directory and of /dev/shm
// (segments) that appeared during the run and are still there at its end are named, and fail it.
// Something else making pd3-* files meanwhile (a benchmark run beside the tests) shows up here too.
const LEFTOVER_DIRS = [tmpdir(), '/dev/shm'];
const pd3Entries = () =>
  new Set(LEFTOVER_DIRS.flatMap((dir) => (existsSync(dir) ? readdirSync(dir).filter((n) => n.startsWith('pd3-')).map((n) => join(dir, n)) : [])));
const entriesBefore = pd3Entries();

let passed = 0;
let failed = 0;
let skipped = 0;
// Tests that skip for a missing optional program append their reason here (test/optional-program.ts).
const scratch = mkdtempSync(join(tmpdir(), 'pd3-test-'));
const skipLog = join(scratch, 'skipped.txt');

// Native unit and stress tests (test/native), one executable.
const nativeBin = join(root, 'build', 'pd3_native_tests');
if (!existsSync(nativeBin)) {
  console.error(`test: ${nativeBin} was not built`);
  process.exit(1);
}
const native = spawnSync(nativeBin, [], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
process.stdout.write(native.stdout);
const m = /native: (\d+) passed, (\d+) failed/.exec(native.stdout);
if (m) {
  passed += Number(m[1]);
  failed += Number(m[2]);
}
if (native.status !== 0 && (!m || Number(m[2]) === 0)) failed += 1; // crashed before its summary

// TS tests (vitest), with a JSON report to count them.
const report = join(scratch, 'report.json');
const vitest = spawnSync(
  join(root, 'node_modules', '.bin', 'vitest'),
  ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...args],
  { cwd: root, stdio: 'inherit', env: { ...process.env, PD3_SKIP_LOG: skipLog } },
);
if (existsSync(report)) {
  const r = JSON.parse(readFileSync(report, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests;
  skipped += r.numPendingTests + r.numTodoTests;
}
if (vitest.status !== 0 && failed === 0) failed += 1; // a suite failed to load or vitest crashed

const after = snapshot();
const written = [...new Set([...before.keys(), ...after.keys()])].filter((f) => before.get(f) !== after.get(f)).sort();
if (written.length > 0) {
  console.log(`tests wrote into the checkout (they may write only to temporary directories): ${written.join(', ')}`);
  failed += 1;
}

// One line per reason (a test file's workers may record the same reason more than once).
const reasons = existsSync(skipLog) ? [...new Set(readFileSync(skipLog, 'utf8').split('\n').filter(Boolean))] : [];
for (const reason of reasons) console.log(reason);
rmSync(scratch, { recursive: true, force: true });

const leftovers = [...pd3Entries()].filter((e) => !entriesBefore.has(e)).sort();
if (leftovers.length > 0) {
  console.log(`tests left behind (they must remove what they make): ${leftovers.join(', ')}`);
  failed += 1;
}
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
