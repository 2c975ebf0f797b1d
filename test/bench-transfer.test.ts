// `npm run bench -- transfer`'s two native programs together: the offloaded host program
// (build/pd3_bench_transfer) against the instant agent (build/pd3_bench_instant_agent), the
// benchmark's row of the host library's own cost. Every request the host counts as done must be one
// the agent answered, with no error, and the agent must stop cleanly on SIGTERM.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { allowedCpus } from '../dist/examples/harness/core-layout.js';

const build = (name: string): string => fileURLToPath(new URL(`../build/${name}`, import.meta.url));

interface HostRun {
  ops: number;
  errors: number;
  mops: number;
  host_cpu_ns_per_op: number;
  host_sys_ns_per_op: number;
}

// Runs the host program with `args` against the instant agent; checks that both exit cleanly and
// returns the host's report and how many requests the agent answered.
async function againstInstantAgent(name: string, args: string[]): Promise<{ run: HostRun; answered: number }> {
  const segment = `pd3-test-${name}-${process.pid}`;
  const host = spawn(build('pd3_bench_transfer'), ['--mode', 'offload', '--segment', segment, ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let hostErr = '';
  host.stderr!.on('data', (d: Buffer) => (hostErr += d.toString()));
  const started: { agent?: ChildProcess } = {};  // set from the line callback
  let agentOut = '';
  let last = '';
  createInterface({ input: host.stdout! }).on('line', (line) => {
    last = line;
    if ((JSON.parse(line) as { segment?: string }).segment !== undefined) {
      started.agent = spawn(build('pd3_bench_instant_agent'), [segment], { stdio: ['ignore', 'pipe', 'inherit'] });
      started.agent.stdout!.on('data', (d: Buffer) => (agentOut += d.toString()));
    }
  });
  const hostCode = await new Promise<number | null>((resolve) => host.on('exit', resolve));
  expect(hostErr).toBe('');
  expect(hostCode).toBe(0);
  const a = started.agent;
  if (a === undefined) throw new Error('the host program never named its segment');
  const agentExit = new Promise<number | null>((resolve) => a.on('exit', resolve));
  a.kill('SIGTERM');
  expect(await agentExit).toBe(0);
  return { run: JSON.parse(last) as HostRun, answered: (JSON.parse(agentOut.trim()) as { answered: number }).answered };
}

describe('bench transfer: the host program against the instant agent', () => {
  it('completes every request the agent answered, without errors', async () => {
    const { run, answered } = await againstInstantAgent('instant',
      ['--threads', '1', '--window', '256', '--seconds', '0.5', '--publish-batch', '8']);
    expect(run.errors).toBe(0);
    expect(run.ops).toBeGreaterThan(1000);
    // The kernel's part is a part of the host's CPU time, not a second count of it.
    expect(run.host_sys_ns_per_op).toBeGreaterThanOrEqual(0);
    expect(run.host_sys_ns_per_op).toBeLessThanOrEqual(run.host_cpu_ns_per_op);
    // The host drains what is in flight when its clock runs out, so every request is counted once;
    // the agent also answered the region's ALLOCATE and, at the end, its DEALLOCATE.
    expect(answered).toBe(run.ops + 2);
  }, 30_000);

  it('sleeps as --sleep-every and --sleep-us say (the diagnostic of "What a sleep costs the host")', async () => {
    // 256 requests in flight, a 20 ms sleep after every 256 completed: in 0.5 s at most 26 sleeps,
    // with less than two windows completed between two of them, and one window drained at the end.
    // Without the sleeps the same run completes millions.
    const { run, answered } = await againstInstantAgent('sleepy', ['--threads', '1', '--window', '256',
      '--seconds', '0.5', '--publish-batch', '8', '--sleep-every', '256', '--sleep-us', '20000']);
    expect(run.errors).toBe(0);
    expect(run.ops).toBeGreaterThan(0);
    expect(run.ops).toBeLessThanOrEqual(27 * 2 * 256);
    expect(answered).toBe(run.ops + 2);
  }, 30_000);

  it('the instant agent refuses a missing segment and a bad command line', async () => {
    const once = (args: string[]): Promise<{ code: number | null; err: string }> =>
      new Promise((resolve) => {
        const p = spawn(build('pd3_bench_instant_agent'), args, { stdio: ['ignore', 'ignore', 'pipe'] });
        let err = '';
        p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
        p.on('exit', (code) => resolve({ code, err }));
      });
    const usage = await once([]);
    expect(usage.code).toBe(2);
    expect(usage.err).toMatch(/^usage: pd3_bench_instant_agent SEGMENT/);
    const missing = await once([`pd3-test-no-such-segment-${process.pid}`]);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/instant agent: attach pd3-test-no-such-segment-\d+: /);
  });
});

// The line round trip printed beside every run of `bench transfer`.
describe('bench transfer: the cache line round trip between two CPUs', () => {
  const run = (args: string[]): { code: number | null; out: string; err: string } => {
    const r = spawnSync(build('pd3_bench_core_to_core'), args, { encoding: 'utf8' });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const cpus = allowedCpus();

  it.skipIf(cpus.length < 2)('times round trips between two allowed CPUs', () => {
    const r = run([String(cpus[0]), String(cpus[1]), '--ms', '50']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const m = JSON.parse(r.out) as { cpus: number[]; round_trips: number; ns_per_round_trip: number };
    expect(m.cpus).toEqual([cpus[0], cpus[1]]);
    // It looks at the clock every 256 round trips and stops at the first look past 50 ms: whole
    // runs of 256, lasting at least the 50 ms asked for. (No upper bound: on a loaded machine a
    // round trip may wait for the scheduler.) A round trip between two CPUs is never free.
    expect(m.round_trips % 256).toBe(0);
    expect(m.round_trips).toBeGreaterThanOrEqual(256);
    expect(m.ns_per_round_trip * m.round_trips).toBeGreaterThanOrEqual(50e6 - 0.05 * m.round_trips);  // printed to 0.1 ns
    expect(m.ns_per_round_trip).toBeGreaterThan(1);
  });

  it('refuses a bad command line (exit 2) and a CPU it may not run on (exit 1)', () => {
    for (const args of [[], ['0'], ['0', '0'], ['0', 'x'], ['0', '1', '--ms', '0'], ['0', '1', '--ms', '10001'], ['0', '1', '--ms'], ['-1', '1']]) {
      const r = run(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err).toMatch(/^usage: pd3_bench_core_to_core CPU_A CPU_B/);
    }
    const outside = Math.max(...cpus) + 1;
    const r = run([String(cpus[0]), String(outside)]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`cannot run on CPU ${outside}`);
  });
});
