// loadgen.ts — runs the native load generator (build/pd3-loadgen, bench/loadgen; docs/loadgen.md)
// with typed options and returns its JSON result line. A non-zero exit rejects with a LoadgenError
// carrying the stderr text (and the result, when the run got far enough to print one).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnOnSide } from './core-layout.js';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Where cmake puts pd3-loadgen in a checkout (next to pd3_native_tests); $PD3_LOADGEN overrides. */
export const LOADGEN_BINARY = process.env.PD3_LOADGEN ?? join(dist, '..', 'build', 'pd3-loadgen');

export type LoadgenProtocol = 'resp' | 'binary';
export type LoadgenWorkload = 'A' | 'B' | 'C' | 'D' | 'E' | 'F';
export type LoadgenDistribution = 'uniform' | 'zipfian' | 'latest';

/** The flags of pd3-loadgen (camelCase; seconds as numbers). Unset fields take its defaults. */
export interface LoadgenOptions {
  port: number;
  host?: string;
  protocol?: LoadgenProtocol;
  workload?: LoadgenWorkload;
  distribution?: LoadgenDistribution;
  records?: number;
  valueSize?: number;
  seed?: number;
  /** Measured operations (0 with `load`: load only); exclusive with durationS. */
  operations?: number;
  durationS?: number;
  warmupS?: number;
  /** Write every record (version 0) before the run. */
  load?: boolean;
  connections?: number;
  pipeline?: number;
  /** Open loop: operations per second on a fixed schedule. */
  rate?: number;
  verify?: boolean;
  scanMax?: number;
  maxErrors?: number;
  replyTimeoutS?: number;
  /** Pin the load generator to this CPU. */
  cpu?: number;
  /** Another binary than LOADGEN_BINARY. */
  binary?: string;
  /** Each stderr line as it arrives (load progress, error lines, the summary). */
  onStderr?: (line: string) => void;
}

/** pd3-loadgen's JSON line, camelCased. */
export interface LoadgenResult {
  ops: number;
  seconds: number;
  kops: number;
  p50Us: number;
  p99Us: number;
  p999Us: number;
  maxUs: number;
  meanUs: number;
  errors: number;
  errorReplies: number;
  unexpectedReplies: number;
  connectionErrors: number;
  lostRequests: number;
  wrongValues: number;
  verifiedReads: number;
  notFound: number;
  requests: number;
  /** Open loop: operations scheduled in the window but never sent (the server fell behind). */
  backlog: number;
  connections: number;
  pipeline: number;
  protocol: LoadgenProtocol;
  workload: LoadgenWorkload;
  distribution: LoadgenDistribution;
  records: number;
  valueSize: number;
  rate: number | null;
  verify: boolean;
  loaded: number;
  loadSeconds: number;
  /** CPU of pd3-loadgen itself over the measured window. */
  cpuUserS: number;
  cpuSysS: number;
  cpuUsPerOp: number;
  pinnedCpu: number | null;
}

/** A run that exited non-zero: the message is pd3-loadgen's stderr. */
export class LoadgenError extends Error {
  constructor(
    message: string,
    readonly exitCode: number | null,
    readonly stderr: string,
    /** The JSON result, if the run printed one before failing (wrong values, errors). */
    readonly result: LoadgenResult | null,
  ) {
    super(message);
    this.name = 'LoadgenError';
  }
}

/** The command line for `o` (without the binary). */
export function loadgenArgs(o: LoadgenOptions): string[] {
  const args = ['--port', String(o.port)];
  const add = (flag: string, v: string | number | undefined): void => {
    if (v !== undefined) args.push(flag, String(v));
  };
  add('--host', o.host);
  add('--protocol', o.protocol);
  add('--workload', o.workload);
  add('--distribution', o.distribution);
  add('--records', o.records);
  add('--value-size', o.valueSize);
  add('--seed', o.seed);
  add('--operations', o.operations);
  add('--duration', o.durationS);
  add('--warmup', o.warmupS);
  add('--connections', o.connections);
  add('--pipeline', o.pipeline);
  add('--rate', o.rate);
  add('--scan-max', o.scanMax);
  add('--max-errors', o.maxErrors);
  add('--reply-timeout', o.replyTimeoutS);
  add('--cpu', o.cpu);
  if (o.load) args.push('--load');
  if (o.verify) args.push('--verify');
  return args;
}

const camel = (k: string): string => k.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/** Parses the last JSON object line of pd3-loadgen's stdout (null if there is none). */
export function parseLoadgenOutput(stdout: string): LoadgenResult | null {
  const line = stdout.split('\n').reverse().find((l) => l.startsWith('{'));
  if (line === undefined) return null;
  const raw = JSON.parse(line) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) out[camel(k)] = v;
  return out as unknown as LoadgenResult;
}

/** Runs pd3-loadgen to completion. */
export function runLoadgen(o: LoadgenOptions): Promise<LoadgenResult> {
  const bin = o.binary ?? LOADGEN_BINARY;
  return new Promise((resolve, reject) => {
    // A client: on the other side of the core layout in force (core-layout.ts).
    const child = spawnOnSide('other', bin, loadgenArgs(o), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let partial = '';
    child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr!.setEncoding('utf8').on('data', (s: string) => {
      stderr += s;
      if (!o.onStderr) return;
      partial += s;
      const lines = partial.split('\n');
      partial = lines.pop()!;
      for (const l of lines) o.onStderr(l);
    });
    child.on('error', (e) => reject(new LoadgenError(`${bin}: ${e.message}`, null, stderr, null)));
    child.on('close', (code, signal) => {
      if (o.onStderr && partial !== '') o.onStderr(partial);
      let result: LoadgenResult | null = null;
      try {
        result = parseLoadgenOutput(stdout);
      } catch {
        result = null;
      }
      if (code === 0 && result !== null) return resolve(result);
      const why = code === 0 ? 'printed no result line' : signal !== null ? `killed by ${signal}` : `exit ${code}`;
      reject(new LoadgenError(`pd3-loadgen ${why}: ${stderr.trim()}`, code, stderr, result));
    });
  });
}
