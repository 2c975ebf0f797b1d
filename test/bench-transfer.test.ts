// `npm run bench -- transfer`'s two native programs together: the offloaded host program
// (build/pd3_bench_transfer) against the instant agent (build/pd3_bench_instant_agent), the
// benchmark's row of the host library's own cost. Every request the host counts as done must be one
// the agent answered, with no error, and the agent must stop cleanly on SIGTERM.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const build = (name: string): string => fileURLToPath(new URL(`../build/${name}`, import.meta.url));

interface HostRun {
  ops: number;
  errors: number;
  mops: number;
  host_cpu_ns_per_op: number;
}

describe('bench transfer: the host program against the instant agent', () => {
  it('completes every request the agent answered, without errors', async () => {
    const segment = `pd3-test-instant-${process.pid}`;
    const host = spawn(build('pd3_bench_transfer'),
      ['--mode', 'offload', '--segment', segment, '--threads', '1', '--window', '256', '--seconds', '0.5', '--publish-batch', '8'],
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
    const run = JSON.parse(last) as HostRun;
    const answered = (JSON.parse(agentOut.trim()) as { answered: number }).answered;
    expect(run.errors).toBe(0);
    expect(run.ops).toBeGreaterThan(1000);
    // The host drains what is in flight when its clock runs out, so every request is counted once;
    // the agent also answered the region's ALLOCATE.
    expect(answered).toBe(run.ops + 1);
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
