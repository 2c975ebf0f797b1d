// optional-program.ts — a test that needs a system program PD3 does not require (redis-server,
// redis-benchmark, etcd, clang, ...) finds it on PATH, and when it is missing skips with one line
// that names the program and the Debian package bringing it. `npm test` (scripts/test.mjs) collects
// those lines into its summary; with PD3_REQUIRE_OPTIONAL=1 (set by .ci/run, which installs every
// package) a missing program fails the test file instead, so CI never skips silently.
import { appendFileSync } from 'node:fs';
import { findOnPath } from '../dist/examples/harness/on-path.js';

export { findOnPath };

/** What an optional program is for, to name it when it is missing. */
export interface OptionalProgram {
  /** The executable's name on PATH. */
  name: string;
  /** The Debian package that installs it. */
  debianPackage: string;
  /** What the tests that need it check, for the skip line. */
  needs: string;
}

/** Records why some tests skip: prints the line and appends it to $PD3_SKIP_LOG for the summary
 *  of `npm test`; under PD3_REQUIRE_OPTIONAL=1 throws instead. */
export function reportSkip(line: string): void {
  if (process.env.PD3_REQUIRE_OPTIONAL === '1') throw new Error(`${line}; PD3_REQUIRE_OPTIONAL=1 forbids skipping`);
  console.log(line);
  const log = process.env.PD3_SKIP_LOG;
  if (log) appendFileSync(log, `${line}\n`);
}

/** Finds `program` on PATH. When it is missing, reports one line "skipped: WHAT (NAME is not on
 *  PATH; Debian package PKG)" (reportSkip) and returns null, so the caller skips. */
export function optionalProgram(program: OptionalProgram): string | null {
  const found = findOnPath(program.name);
  if (found === null) {
    reportSkip(`skipped: ${program.needs} (${program.name} is not on PATH; Debian package ${program.debianPackage})`);
  }
  return found;
}
