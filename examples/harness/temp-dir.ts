// temp-dir.ts — a benchmark's scratch directory: made under the system's temporary directory, and
// removed with everything in it when the process exits (a normal end or process.exit alike).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A new directory named `prefix` + random characters, removed when this process exits. */
export function tempDirRemovedAtExit(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
