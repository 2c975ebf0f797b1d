// The benchmarks' command lines (examples/harness/bench-command.ts): --help answers with the usage
// and exit 0; a bad flag or value is refused with exit 2, naming it. Nothing is run.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const bench = (name: string, args: string[]): { status: number | null; stdout: string; stderr: string } => {
  const r = spawnSync(process.execPath, [new URL(`../dist/bench/${name}.js`, import.meta.url).pathname, ...args], { encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};

describe('benchmark command lines', () => {
  for (const name of ['pool', 'transfer', 'prefetch', 'tier-io']) {
    it(`${name}: --help prints the usage and exits 0; an unknown flag exits 2`, () => {
      const help = bench(name, ['--help']);
      expect(help.status).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^usage: npm run bench -- ${name} `));
      const bad = bench(name, ['--bogus']);
      expect(bad.status).toBe(2);
      expect(bad.stderr).toMatch(new RegExp(`^${name}: Unknown option '--bogus'`));
      expect(bad.stderr).toContain('usage:');
    });
  }

  it('refuses a bad value with the check that names it', () => {
    const r = bench('prefetch', ['--mirror', 'pcap']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^prefetch: --mirror: afpacket, tee or dpdk, got 'pcap'/);
    const tier = bench('tier-io', ['--concurrency', '0']);
    expect(tier.status).toBe(2);
    expect(tier.stderr).toMatch(/^tier-io: --concurrency: 1\.\.1024, got '0'/);
    const op = bench('tier-io', ['--op', 'scan']);
    expect(op.status).toBe(2);
    expect(op.stderr).toMatch(/^tier-io: --op: read or page-write, got 'scan'/);
    const sync = bench('e2e', ['--mem-sync', 'none']);
    expect(sync.status).toBe(2);
    expect(sync.stderr).toMatch(/--mem-sync: none or batch, with --mem-dram-budget/);
    const page = bench('e2e', ['--mem-dram-budget', '640K', '--mem-page-size', 'big']);
    expect(page.status).toBe(2);
    expect(page.stderr).toMatch(/--mem-page-size: a size like 4K, with --mem-dram-budget; got 'big'/);
    const layout = bench('pool', ['--layout', 'sideways']);
    expect(layout.status).toBe(2);
    expect(layout.stderr).toMatch(/--layout: split or shared, got 'sideways'/);
  });

  it('dma: --help, an unknown flag, and each bad latency refused naming it', () => {
    const help = bench('dma', ['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm run bench -- dma /);
    expect(bench('dma', ['--bogus']).status).toBe(2);
    for (const bad of ['1001', '-1', 'x', '1,,2', '0.5us']) {
      const r = bench('dma', [`--latencies=${bad}`]);
      expect(r.status, bad).toBe(2);
      expect(r.stderr, bad).toMatch(/^dma: --latencies: each must be off or a number from 0 to 1000, got "/);
    }
  });
});
