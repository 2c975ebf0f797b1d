// core-layout.test.ts — the benchmarks' core layout (examples/harness/core-layout.ts): CPU lists
// parsed and printed, bad lists refused, split pinning really taking effect on the processes it
// starts (read back from /proc), and the fallback to shared, with its reason, wherever split cannot
// be had. Layouts are resolved in child processes: resolving split pins the process that asks.
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { cpuList, parseCpuList } from '../dist/examples/harness/core-layout.js';

const MODULE = new URL('../dist/examples/harness/core-layout.js', import.meta.url).href;

/** Runs `body` (ESM, with the module imported as L) in a fresh Node process; returns its JSON output. */
function inChild(body: string): Record<string, unknown> {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `import * as L from '${MODULE}';\n${body}`], { encoding: 'utf8', timeout: 20_000 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

describe('CPU lists', () => {
  it('parse and print ranges', () => {
    expect(parseCpuList('0')).toEqual([0]);
    expect(parseCpuList('3,0-1')).toEqual([0, 1, 3]);
    expect(parseCpuList('1,1,1')).toEqual([1]);
    expect(cpuList([0, 1, 2, 4, 6, 7])).toBe('0-2,4,6-7');
    expect(cpuList(parseCpuList('5-9,2'))).toBe('2,5-9');
  });

  it('refuse what is not a list, naming the flag', () => {
    for (const bad of ['', 'x', '1-', '-1', '2-1', '0,,1', '1.5', '99999']) {
      expect(() => parseCpuList(bad, '--host-cpus'), bad).toThrow(/^--host-cpus: /);
    }
  });
});

describe('layouts', () => {
  const cpus = availableParallelism();

  it('shared pins nothing and says what it uses', () => {
    const r = inChild(`const l = L.resolveLayout('shared'); console.log(JSON.stringify({ l, cmd: L.onSide(l, 'host', 'x', ['a']), line: L.describeLayout(l) }));`);
    expect((r.l as { name: string }).name).toBe('shared');
    expect(r.cmd).toEqual({ file: 'x', args: ['a'] });
    expect(r.line).toMatch(/^layout shared: every process on CPUs /);
  });

  it.skipIf(cpus < 2)('split puts the host side and the other side on their CPUs (read back from /proc)', () => {
    const r = inChild(`
import { spawnSync } from 'node:child_process';
const l = L.resolveLayout('split', [0]);
const allowed = (side) => { const c = L.onSide(l, side, 'grep', ['Cpus_allowed_list', '/proc/self/status']); return spawnSync(c.file, c.args, { encoding: 'utf8' }).stdout.split(':')[1].trim(); };
const self = (await import('node:fs')).readFileSync('/proc/self/status', 'utf8').match(/Cpus_allowed_list:\\s*(\\S+)/)[1];
console.log(JSON.stringify({ l, host: allowed('host'), other: allowed('other'), self, record: L.layoutRecord(l) }));`);
    const l = r.l as { name: string; hostCpus: number[]; otherCpus: number[] };
    expect(l.name).toBe('split');
    expect(l.hostCpus).toEqual([0]);
    expect(r.host).toBe('0');
    expect(r.other).toBe(cpuList(l.otherCpus));
    expect(l.otherCpus).not.toContain(0);
    expect(r.self).toBe(cpuList(l.otherCpus)); // the driver stands with the clients
    expect(r.record).toEqual({ name: 'split', host_cpus: [0], other_cpus: l.otherCpus, fallback: null });
  });

  it('falls back to shared, with the reason, when split cannot be had', () => {
    const absent = inChild(`console.log(JSON.stringify(L.resolveLayout('split', [4095])));`);
    expect(absent.name).toBe('shared');
    expect(absent.fallback).toMatch(/host CPU 4095 is not among the allowed CPUs/);
    if (cpus >= 2) {
      const everything = inChild(`console.log(JSON.stringify(L.resolveLayout('split', L.parseCpuList('0-${cpus - 1}'))));`);
      expect(everything.name).toBe('shared');
      expect(everything.fallback).toMatch(/leave no CPU/);
    }
    // One allowed CPU (as on a 1-CPU machine): the process is confined first.
    const r = spawnSync('taskset', ['-c', '0', process.execPath, '--input-type=module', '-e',
      `import * as L from '${MODULE}'; console.log(JSON.stringify(L.resolveLayout('split')));`], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const one = JSON.parse(r.stdout) as { name: string; fallback: string };
    expect(one.name).toBe('shared');
    expect(one.fallback).toMatch(/split needs 2 CPUs, this process may use 1/);
  });
});
