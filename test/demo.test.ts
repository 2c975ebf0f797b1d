// demo.test.ts — `npm start` on a small dataset: it runs local, sync and pd3 end to end with real
// processes, prints the side-by-side table and the chart's path, writes the chart (SVG, Vega-Lite
// spec, data) only into the --out directory it is given (a fresh temporary one, removed after),
// plots the numbers it printed, and leaves nothing behind.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const START = fileURLToPath(new URL('../dist/examples/start.js', import.meta.url));
const CHECKOUT_DEMO = fileURLToPath(new URL('../results/demo/throughput.svg', import.meta.url));

let out: string | null = null;
afterEach(() => {
  if (out) rmSync(out, { recursive: true, force: true });
  out = null;
});

describe('npm start', () => {
  it('--help says what it does and exits 0; an unknown option exits 2', () => {
    const help = spawnSync(process.execPath, [START, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/--out DIR/);
    const bad = spawnSync(process.execPath, [START, '--nope'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--nope/);
  });

  it('compares local, sync and pd3, charts the printed numbers into --out, and stops everything it started', () => {
    out = mkdtempSync(join(tmpdir(), 'pd3-demo-'));
    const checkoutChartBefore = existsSync(CHECKOUT_DEMO) ? statSync(CHECKOUT_DEMO).mtimeMs : null;
    const shmBefore = new Set(readdirSync('/dev/shm'));
    const r = spawnSync(process.execPath, [START, '--out', out], {
      encoding: 'utf8',
      timeout: 90_000,
      env: { ...process.env, PD3_DEMO_RECORDS: '5000', PD3_DEMO_SECONDS: '1' },
    });
    expect(r.status, r.stderr).toBe(0);
    const rows = r.stdout.split('\n').filter((l) => /^\| (local|sync|pd3) /.test(l));
    expect(rows.map((l) => l.split('|')[1]!.trim())).toEqual(['local', 'sync', 'pd3']);
    const printed = rows.map((row) => Number(row.split('|')[2]));  // k requests/s, one decimal
    for (const k of printed) expect(k).toBeGreaterThan(0);
    expect(rows[2]).toMatch(/\d+\.\d%/);  // pd3's share of misses served from the Loading Zone

    // The chart, its Vega-Lite spec and its data, all in --out and nowhere else.
    const chart = /chart: (\S+)/.exec(r.stdout)?.[1];
    expect(chart).toBe(join(out, 'throughput.svg'));
    expect(readdirSync(out).sort()).toEqual(['throughput.data.json', 'throughput.svg', 'throughput.vl.json']);
    expect(existsSync(CHECKOUT_DEMO) ? statSync(CHECKOUT_DEMO).mtimeMs : null).toBe(checkoutChartBefore);
    const svg = readFileSync(join(out, 'throughput.svg'), 'utf8');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('pd3-kv throughput, YCSB-B uniform, 1% local cache');

    // What is plotted is what the table printed: the same modes in order, the same k requests/s.
    const spec = JSON.parse(readFileSync(join(out, 'throughput.vl.json'), 'utf8')) as { data: { values: Array<{ mode: string; kops: number }> } };
    const plotted = spec.data.values;
    expect(plotted.map((v) => v.mode)).toEqual(['local', 'sync', 'pd3']);
    expect(plotted.map((v) => Number(v.kops.toFixed(1)))).toEqual(printed);
    expect(JSON.parse(readFileSync(join(out, 'throughput.data.json'), 'utf8'))).toEqual(plotted);
    for (const k of printed) expect(svg).toContain(`>${k.toFixed(1)}</text>`);  // the bars' value labels

    const leftover = readdirSync('/dev/shm').filter((f) => !shmBefore.has(f) && f.startsWith('pd3-e2e-kv'));
    expect(leftover).toEqual([]);
  }, 120_000);
});
