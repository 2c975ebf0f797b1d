#!/usr/bin/env node
// client.ts — pd3-page-client: drives a page server with concurrent grpc-js callers over a YCSB page-id
// stream and prints one JSON report (throughput, p50, p99, the server's counters) on stdout.
// With --verify every page read is checked against the model of what the run wrote; exit 1 on a
// mismatch or a failed call, 2 on bad flags.
import { parseArgs } from 'node:util';
import { LOAD_WORKLOADS, runLoad, type LoadOptions } from './load-run.js';
import { PagesClient } from './pages-client.js';

const HELP = `Usage: pd3-page-client --target HOST:PORT --pages N [flags]

Concurrent @grpc/grpc-js callers issuing GetPage / PutPage (pagestore.Pages) over a YCSB page-id
stream; prints one JSON line: ops, gets, puts, errors, seconds, throughput (ops/s), p50Us, p99Us,
verified, mismatches, and the server's Stats.

  --target HOST:PORT     the page server, or the pd3-agent's tee port in front of it (required)
  --pages N              pages the server holds, ids 0..N-1 (required)
  --callers N            concurrent callers (default 16)
  --ops N                operations (default 10000)
  --duration-ms N        stop after this long even if operations remain
  --workload A|B|C|F     YCSB mix: A 50% PutPage, B 5% (default), C reads only, F read-modify-write
  --distribution uniform|zipfian   page ids (default uniform)
  --seed N               workload seed (default 1)
  --connections N        HTTP/2 connections shared by the callers (default 1)
  --verify               check every page read against the versions this run wrote (one operation per
                         page at a time; the server must hold only version-0 pages at the start)
  --help                 print this text
`;

function wholeNumber(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new Error(`--${name} must be a whole number from ${min} to ${max}, got "${value}"`);
  }
  return Number(value);
}

function parse(argv: string[]): LoadOptions | null {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      target: { type: 'string' }, pages: { type: 'string' }, callers: { type: 'string' }, ops: { type: 'string' },
      'duration-ms': { type: 'string' }, workload: { type: 'string' }, distribution: { type: 'string' },
      seed: { type: 'string' }, connections: { type: 'string' }, verify: { type: 'boolean' }, help: { type: 'boolean' },
    },
  });
  if (values.help === true) return null;
  if (values.target === undefined || !/^[^:\s]+:\d{1,5}$/.test(values.target)) throw new Error('--target HOST:PORT is required');
  const pages = wholeNumber('pages', values.pages, 1, 2 ** 32);
  if (pages === undefined) throw new Error('--pages N is required (the server\'s --pages)');
  const workload = values.workload ?? 'B';
  if (!(LOAD_WORKLOADS as readonly string[]).includes(workload)) throw new Error(`--workload must be one of ${LOAD_WORKLOADS.join(', ')}, got "${workload}"`);
  const distribution = values.distribution ?? 'uniform';
  if (distribution !== 'uniform' && distribution !== 'zipfian') throw new Error(`--distribution must be uniform or zipfian, got "${distribution}"`);
  return {
    target: values.target,
    pages,
    callers: wholeNumber('callers', values.callers, 1, 100_000),
    ops: wholeNumber('ops', values.ops, 1, 2 ** 45),
    durationMs: wholeNumber('duration-ms', values['duration-ms'], 1, 2 ** 31),
    workload: workload as LoadOptions['workload'],
    distribution,
    seed: wholeNumber('seed', values.seed, 0, Number.MAX_SAFE_INTEGER),
    connections: wholeNumber('connections', values.connections, 1, 1024),
    verify: values.verify === true,
  };
}

let options: LoadOptions | null;
try {
  options = parse(process.argv.slice(2));
} catch (e) {
  process.stderr.write(`pd3-page-client: ${e instanceof Error ? e.message : String(e)}\nRun 'pd3-page-client --help' for the flags.\n`);
  process.exit(2);
}
if (options === null) {
  process.stdout.write(HELP);
  process.exit(0);
}
const report = await runLoad(options);
const statsClient = new PagesClient(options.target);
const server = await statsClient.stats().catch((e: unknown) => ({ error: e instanceof Error ? e.message : String(e) }));
statsClient.close();
process.stdout.write(`${JSON.stringify({ ...report, server })}\n`);
process.exit(report.mismatches > 0 || (options.verify === true && report.errors > 0) ? 1 : 0);
