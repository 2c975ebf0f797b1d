// demo.test.ts — `npm start` on a small dataset: it runs local, sync and pd3 end to end with real
// processes, prints the side-by-side table and the chart's path, and leaves nothing behind.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const START = fileURLToPath(new URL('../dist/examples/start.js', import.meta.url));

describe('npm start', () => {
  it('compares local, sync and pd3 and stops everything it started', () => {
    const shmBefore = new Set(readdirSync('/dev/shm'));
    const r = spawnSync(process.execPath, [START], {
      encoding: 'utf8',
      timeout: 90_000,
      env: { ...process.env, PD3_DEMO_RECORDS: '5000', PD3_DEMO_SECONDS: '1' },
    });
    expect(r.status, r.stderr).toBe(0);
    const rows = r.stdout.split('\n').filter((l) => /^\| (local|sync|pd3) /.test(l));
    expect(rows.map((l) => l.split('|')[1]!.trim())).toEqual(['local', 'sync', 'pd3']);
    for (const row of rows) expect(Number(row.split('|')[2])).toBeGreaterThan(0);  // k requests/s
    expect(rows[2]).toMatch(/\d+\.\d%/);  // pd3's share of misses served from the Loading Zone
    const chart = /chart: (\S+)/.exec(r.stdout)?.[1];
    expect(chart && existsSync(chart)).toBe(true);
    const leftover = readdirSync('/dev/shm').filter((f) => !shmBefore.has(f) && f.startsWith('pd3-e2e-kv'));
    expect(leftover).toEqual([]);
  }, 120_000);
});
