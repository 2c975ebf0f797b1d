// `npm run bench -- mrrc` (bench/mrrc.ts over build/pd3_bench_mrrc): its command line refuses bad
// flags and bad trace files with exit 2 naming the problem, and a short run replays a recorded
// trace (docs/mrrc.md's format) with the hit ratio that trace must give.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const run = (args: string[]): { status: number | null; stdout: string; stderr: string } => {
  const r = spawnSync(process.execPath, [new URL('../dist/bench/mrrc.js', import.meta.url).pathname, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};

describe('bench mrrc', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pd3-bench-mrrc-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const header = '# pd3 registration trace v1\n';

  it('--help exits 0; bad flags and values exit 2 naming them', () => {
    const help = run(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm run bench -- mrrc /);
    const bogus = run(['--bogus']);
    expect(bogus.status).toBe(2);
    expect(bogus.stderr).toMatch(/Unknown option '--bogus'/);
    const zero = run(['--requests', '0']);
    expect(zero.status).toBe(2);
    expect(zero.stderr).toMatch(/--requests needs a positive integer, got '0'/);
    const share = run(['--eviction-share', '1.5']);
    expect(share.status).toBe(2);
    expect(share.stderr).toMatch(/--eviction-share needs a number from 0 to 1, got '1.5'/);
    const missing = run(['--trace', join(dir, 'nope.txt')]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/does not exist/);
  });

  it('a malformed trace exits 2 with the line that is wrong', () => {
    const noHeader = join(dir, 'no-header.txt');
    writeFileSync(noHeader, '0 4096\n');
    const a = run(['--quick', '--requests', '500', '--trace', noHeader]);
    expect(a.status).toBe(2);
    expect(a.stderr).toMatch(/line 1: expected the header/);
    const zeroLength = join(dir, 'zero.txt');
    writeFileSync(zeroLength, `${header}0 4096\n4096 0\n`);
    const b = run(['--quick', '--requests', '500', '--trace', zeroLength]);
    expect(b.status).toBe(2);
    expect(b.stderr).toMatch(/line 3: zero length/);
  });

  it('replays a recorded trace: one frame registered 200 times is 199 hits under every cache', () => {
    const trace = join(dir, 'one-frame.txt');
    writeFileSync(trace, header + '65536 65536\n'.repeat(200));
    const r = run(['--quick', '--requests', '2000', '--trace', trace]);
    expect(r.status, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout.trimEnd().split('\n').at(-1)!) as Record<string, number>;
    expect(result.mrrc_hit_recorded).toBeCloseTo(199 / 200, 6);
    expect(result.pindown_hit_recorded).toBeCloseTo(199 / 200, 6);
    expect(result.nocache_hit_recorded).toBe(0);
    // The model's fit is positive per page for mlock, and both headline traces were replayed.
    expect(result.reg_a_us).toBeGreaterThan(0);
    for (const k of ['mrrc_hit_httpd_like', 'pindown_hit_httpd_like', 'mrrc_cost_httpd_like', 'nocache_cost_httpd_like',
      'mrrc_hit_cello_like', 'pindown_hit_cello_like', 'mrrc_cost_cello_like', 'nocache_cost_cello_like']) {
      expect(result[k], k).toBeTypeOf('number');
    }
    expect(result.mrrc_cost_httpd_like).toBeLessThan(result.nocache_cost_httpd_like!);
    // The first-touch model, worked out by hand for this trace (16 pages a fill): without a cache,
    // the first pin's pages are fresh and the other 199 pins' warm, with 200 unpins; MRRC pins once
    // (fresh) and, with nothing evicted, unpins nothing during the trace.
    const g = (k: string): number => result[k]!;
    const nocache = g('reg_a_us') * 16 + g('reg_warm_a_us') * 16 * 199 + g('reg_warm_b_us') * 200 +
      g('dereg_a_us') * 16 * 200 + g('dereg_b_us') * 200;
    const mrrc = g('reg_a_us') * 16 + g('reg_warm_b_us');
    expect(g('nocache_touch_cost_recorded') / nocache).toBeCloseTo(1, 4);
    expect(g('mrrc_touch_cost_recorded') / mrrc).toBeCloseTo(1, 4);
    expect(g('mrrc_touch_cost_ratio_httpd_like')).toBeCloseTo(g('mrrc_touch_cost_httpd_like') / g('nocache_touch_cost_httpd_like'), 6);
    // The lower bound on any cache's cost: here, keeping the one frame, registered once.
    expect(g('bound_cost_recorded') / (g('reg_a_us') * 16 + g('reg_b_us'))).toBeCloseTo(1, 4);
    // On the HTTPD-like trace (independent draws) no replayed cache goes below it.
    expect(g('bound_cost_httpd_like')).toBeLessThan(g('mrrc_cost_httpd_like'));
    expect(g('bound_cost_httpd_like')).toBeLessThan(g('pindown_cost_httpd_like'));
    expect(g('bound_cost_ratio_httpd_like')).toBeCloseTo(g('bound_cost_httpd_like') / g('nocache_cost_httpd_like'), 6);
  });

  it('the lower bound is worked out by hand, and left out for a trace whose ranges overlap', () => {
    // Two files: A (2 pages) asked 30 times, B (4 pages) 10 times; a 4-page cache. Keeping A saves
    // 30 misses for one registration; B would save less per page, so half of B fills the rest.
    const two = join(dir, 'two-files.txt');
    writeFileSync(two, header + '0 8192\n'.repeat(30) + '8192 16384\n'.repeat(10));
    const r = run(['--quick', '--requests', '500', '--cache-pages', '4', '--trace', two]);
    expect(r.status, r.stderr).toBe(0);
    const g = JSON.parse(r.stdout.trimEnd().split('\n').at(-1)!) as Record<string, number>;
    const reg = (p: number): number => g.reg_a_us! * p + g.reg_b_us!;
    const miss = (p: number): number => reg(p) + g.dereg_a_us! * p;  // deregistration without its per-call part
    const all = 30 * miss(2) + 10 * miss(4);
    const saveA = 30 * miss(2) - reg(2), saveB = 10 * miss(4) - reg(4);
    expect(saveA / 2).toBeGreaterThan(saveB / 4);
    expect(g.bound_cost_recorded! / (all - saveA - saveB / 2)).toBeCloseTo(1, 4);
    // A page inside a block is not an independent object: no bound is given.
    const overlapping = join(dir, 'overlapping.txt');
    writeFileSync(overlapping, header + '0 8192\n4096 4096\n'.repeat(20));
    const o = run(['--quick', '--requests', '500', '--trace', overlapping]);
    expect(o.status, o.stderr).toBe(0);
    const h = JSON.parse(o.stdout.trimEnd().split('\n').at(-1)!) as Record<string, number>;
    expect(h.bound_cost_recorded).toBeUndefined();
    expect(h.mrrc_hit_recorded).toBeGreaterThan(0);
  });
});
