// e2e-apps.ts — how the end-to-end benchmark runs each example data system in each mode: start a
// fresh memory server, the app (and for the pd3 modes an agent with the app's parser), load the
// data, drive it with a client (pd3-loadgen for pd3-kv and the hash map, the page server's own gRPC
// client), and read the app's miss counters.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { PagesClient, PAGES_PARSER_CONFIG, runLoad } from '../page-server/index.js';
import { agentDmaSample, dmaPerAccess, type DmaPerAccess } from './agent-dma.js';
import { measureWindow, usPerOp, type CpuWindow, type RunProcesses } from './cpu-meter.js';
import { spawnOnSide } from './core-layout.js';
import { freePort, startAgent, startDaemon, startMemserver, type Daemon } from './processes.js';
import { runLoadgen, type LoadgenResult } from './loadgen.js';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const root = join(dist, '..');
const KV_CLI = join(dist, 'examples', 'pd3-kv', 'cli.js');
const PAGE_CLI = join(dist, 'examples', 'page-server', 'cli.js');
const HASHMAP = join(root, 'build', 'pd3_hashmap');

export const MODES = ['local', 'sync', 'async', 'leap', 'pd3-noprefetch', 'pd3'] as const;
export type Mode = (typeof MODES)[number];
export type AppName = 'pd3-kv' | 'hashmap' | 'page-server';

/** One app in one mode: what the client saw and what the app counted. */
export interface ModeResult {
  app: AppName;
  mode: Mode;
  kops: number;
  p50Us: number;
  p99Us: number;
  /** Local misses served by checkAndReturn ÷ all local misses (null: no misses counted). */
  hitRate: number | null;
  /** CPU cores the app process used during the measured window. */
  hostCores: number;
  /** CPU µs per request in the measured window: the app (host), the agent (DPU; null without
   *  one) and the memory server. */
  hostCpuUsPerOp: number | null;
  dpuCpuUsPerOp: number | null;
  memserverCpuUsPerOp: number | null;
  /** Mean µs of one out-of-core read as the app saw it, issue to answer (null: the app does not
   *  time its reads, or made none). Through the agent in the pd3 modes, direct otherwise. */
  remoteReadUs?: number | null;
  /** pd3-kv in pd3 mode: the agent's DMA operations per client access it captured (null: its
   *  backend counted none, i.e. shared memory without --dma-latency-us). */
  dmaPerAccess?: DmaPerAccess | null;
  /** The client load the run used: pd3-loadgen's connections × requests outstanding on each, as
   *  its result line reports them (null: the page server, driven by its own client's 16 callers). */
  connections: number | null;
  pipeline: number | null;
  errors: number;
}

/** The client load of pd3-kv and the hash map in every mode: pd3-loadgen, connections × requests
 *  outstanding on each. One load for all, not tuned per mode: the smallest that brings pd3-kv's
 *  local mode within 10% of its peak (`npm run bench -- e2e --find-load`; docs/benchmarks.md "e2e"). */
export const CLIENT_LOAD = { connections: 2, pipeline: 32 } as const;

/** Sizes and timing of one run. */
export interface RunSpec {
  records: number;
  /** Local cache as a percentage of the data (the paper: 1%). */
  cachePercent: number;
  /** Loading Zone bytes (pd3 modes), a power of two. */
  zoneBytes: number;
  warmupMs: number;
  durationMs: number;
  /** How the agent sees requests; dpdk: DPDK's af_packet driver on lo (DPDK_ON_LO). */
  mirror: 'afpacket' | 'tee' | 'dpdk';
  /** Extra pd3-agent flags. */
  agentArgs: string[];
  /** Every app in pd3 mode: --zone-wait-us (absent: each app's default). */
  zoneWaitUs?: number;
  /** Start the memory server with the SSD tier: a data directory and this --dram-budget (absent: regions in DRAM). */
  memDramBudget?: string;
  /** With memDramBudget: the memory server's --sync (absent: batch). */
  memSync?: 'none' | 'batch';
  /** With memDramBudget: the tier's --page-size (absent: the memory server's default, 64K). */
  memPageSize?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The run's memory server: in DRAM, or tiered (spec.memDramBudget) over a fresh data directory
 *  removed when the server stops. */
async function memserverFor(spec: RunSpec, token: string): Promise<Awaited<ReturnType<typeof startMemserver>>> {
  if (spec.memDramBudget === undefined) return startMemserver({ token, capacity: '2G' });
  const dataDir = mkdtempSync(join(tmpdir(), 'pd3-e2e-tier-'));
  const removeDataDir = (): void => rmSync(dataDir, { recursive: true, force: true });
  try {
    const ms = await startMemserver({ token, capacity: '2G', dataDir, extra: ['--dram-budget', spec.memDramBudget, '--sync', spec.memSync ?? 'batch',
      ...(spec.memPageSize !== undefined ? ['--page-size', spec.memPageSize] : [])] });
    ms.child.once('exit', removeDataDir);
    return ms;
  } catch (error) {
    removeDataDir(); // the server never started: nothing else will
    throw error;
  }
}

/** The CPU figures of a ModeResult from the measured window and the client's throughput in it. */
function cpuFigures(w: CpuWindow, kops: number): Pick<ModeResult, 'hostCores' | 'hostCpuUsPerOp' | 'dpuCpuUsPerOp' | 'memserverCpuUsPerOp'> {
  const ops = kops * 1000 * w.seconds;
  return { hostCores: w.host / w.seconds, hostCpuUsPerOp: usPerOp(w.host, ops), dpuCpuUsPerOp: usPerOp(w.dpu, ops),
    memserverCpuUsPerOp: usPerOp(w.memserver, ops) };
}

/** The load a pd3-loadgen run reports it ran with (what results.json records, not what was asked). */
function clientOf(run: LoadgenResult): Pick<ModeResult, 'connections' | 'pipeline'> {
  return { connections: run.connections, pipeline: run.pipeline };
}

/** --mirror dpdk on this machine's loopback: DPDK's af_packet driver on lo, without hugepages or
 *  PCI; 32 KiB frames (framesz must fit blocksz) so requests arrive whole. Each packet is seen twice
 *  on lo (leaving and arriving): the agent drops the repeats (docs/mirror.md, "DPDK"). */
export const DPDK_ON_LO = ['--dpdk-args=--no-huge --no-pci --no-shconf -m 256 --no-telemetry ' +
  '--vdev=net_af_packet0,iface=lo,blocksz=32768,framesz=32768', '--dpdk-port', 'net_af_packet0'];

/** Starts an agent once the segment exists (apps create it as they start). */
async function agentFor(segment: string, memserver: number, token: string, parser: string[], appPort: number, spec: RunSpec): Promise<Daemon> {
  // No parser (pd3-noprefetch): no mirror either.
  // Metrics on a free port, for the DMA counts (agent-dma.ts), unless the caller chose an address.
  const metrics = spec.agentArgs.includes('--metrics') ? [] : ['--metrics', '127.0.0.1:0'];
  const args = parser.length === 0 ? [...metrics, ...spec.agentArgs] : [...parser, '--app', `127.0.0.1:${appPort}`,
    '--mirror', spec.mirror, ...(spec.mirror === 'tee' ? ['--tee-listen', '127.0.0.1:0'] : spec.mirror === 'dpdk' ? DPDK_ON_LO : []),
    ...metrics, ...spec.agentArgs];
  for (let attempt = 0; ; ++attempt) {
    try {
      return await startAgent(segment, [memserver], token, args);
    } catch (e) {
      if (attempt > 50 || !/NOENT|no such|not found/i.test((e as Error).message)) throw e;
      await sleep(100);
    }
  }
}

/** Everything one run started, stopped in reverse order. */
class Stack {
  private readonly undo: Array<() => Promise<unknown>> = [];
  push(f: () => Promise<unknown>): void {
    this.undo.push(f);
  }
  async close(): Promise<void> {
    while (this.undo.length > 0) await this.undo.pop()!().catch(() => undefined);
  }
}

function remoteFlags(mode: Mode, memserverPort: number, segment: string): string[] {
  if (mode === 'local') return [];
  if (mode === 'pd3' || mode === 'pd3-noprefetch') return ['--segment', segment];
  return ['--memservers', `127.0.0.1:${memserverPort}`];
}

/** The app's --zone-wait-us, when the run sets one (pd3 mode only: the others refuse the flag). */
function zoneWaitFlags(mode: Mode, spec: RunSpec): string[] {
  return mode === 'pd3' && spec.zoneWaitUs !== undefined ? ['--zone-wait-us', String(spec.zoneWaitUs)] : [];
}

function rate(zoneHits: number, misses: number): number | null {
  return misses > 0 ? zoneHits / misses : null;
}

// ---- pd3-kv: RESP, YCSB over ioredis ---------------------------------------------------------

async function kvInfo(port: number): Promise<Record<string, number>> {
  const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  await c.connect();
  const text = await c.info('pd3kv');
  c.disconnect();
  const out: Record<string, number> = {};
  for (const line of text.split('\r\n')) {
    const [k, v] = line.split(':');
    if (k && v !== undefined && /^-?\d+(\.\d+)?$/.test(v)) out[k] = Number(v);
  }
  return out;
}

/** `onProgress` (the demo's progress bar): the fraction of the load, then of the timed run, done. */
export async function runKv(mode: Mode, spec: RunSpec, onStep: (what: string) => void,
  onProgress?: (phase: 'load' | 'run', fraction: number) => void): Promise<ModeResult> {
  const token = randomBytes(16).toString('hex');
  const stack = new Stack();
  try {
    const ms = await memserverFor(spec, token);
    stack.push(() => ms.stop());
    const segment = `pd3-e2e-kv-${process.pid}-${randomBytes(3).toString('hex')}`;
    const valueSize = 100;
    const dataBytes = spec.records * (8 + 16 + valueSize);
    const kv = await startDaemon(KV_CLI, ['--listen', '127.0.0.1:0', '--mode', mode, '--page-size', '4K',
      '--memory-budget', String(Math.max(16384, Math.floor((dataBytes * spec.cachePercent) / 100 / 4096) * 4096)),
      '--loading-zone', String(spec.zoneBytes), '--log-level', 'info', ...remoteFlags(mode, ms.port, segment),
      ...zoneWaitFlags(mode, spec)], token, { side: 'host' });
    stack.push(() => kv.stop());
    const kvPort = Number(kv.ready.port);
    let port = kvPort;
    const procs: RunProcesses = { host: kv.child.pid!, memserver: ms.child.pid! };
    let agentMetrics: string | null = null; // pd3 mode: where the agent's DMA counts are read
    if (mode === 'pd3' || mode === 'pd3-noprefetch') {
      const agent = await agentFor(segment, ms.port, token, mode === 'pd3' ? ['--prefetch-parser', 'resp'] : [], kvPort, spec);
      stack.push(() => agent.stop());
      procs.dpu = agent.child.pid!;
      if (mode === 'pd3' && typeof agent.ready.metrics === 'string') agentMetrics = agent.ready.metrics;
      if (mode === 'pd3' && spec.mirror === 'tee') port = Number(agent.ready.teePort);
    }
    onStep('load');
    const loadProgress = (line: string): void => {
      const m = /loading: (\d+) of (\d+) records/.exec(line);
      if (m) onProgress?.('load', Number(m[1]) / Number(m[2]));
    };
    await runLoadgen({ port, load: true, operations: 0, records: spec.records, valueSize, connections: CLIENT_LOAD.connections,
      pipeline: CLIENT_LOAD.pipeline, onStderr: loadProgress });
    onStep('run');
    let ticker: NodeJS.Timeout | null = null;
    if (onProgress) {
      const runStart = Date.now();
      ticker = setInterval(() => onProgress('run', Math.min(1, (Date.now() - runStart) / (spec.warmupMs + spec.durationMs))), 200);
    }
    const before = await kvInfo(kvPort);
    const dmaBefore = agentMetrics === null ? null : await agentDmaSample(agentMetrics);
    const window = measureWindow(procs, spec.warmupMs, spec.durationMs);
    const run = await runLoadgen({ port, workload: 'B', distribution: 'uniform', records: spec.records, valueSize,
      connections: CLIENT_LOAD.connections, pipeline: CLIENT_LOAD.pipeline, warmupS: spec.warmupMs / 1000,
      durationS: spec.durationMs / 1000, seed: 7 }).finally(() => {
      if (ticker) clearInterval(ticker);
    });
    const cpu = cpuFigures(await window, run.kops);
    const after = await kvInfo(kvPort);
    const dma = agentMetrics === null || dmaBefore === null ? undefined : dmaPerAccess(dmaBefore, await agentDmaSample(agentMetrics));
    const d = (k: string): number => (after[k] ?? 0) - (before[k] ?? 0);
    // A read the Loading Zone overtook served nothing: that miss counts once, as a zone hit.
    const misses = d('zone_hits') + d('leap_hits') + d('remote_reads') - d('remote_reads_overtaken');
    return { app: 'pd3-kv', mode, kops: run.kops, p50Us: run.p50Us, p99Us: run.p99Us, hitRate: rate(d('zone_hits'), misses),
      ...cpu, remoteReadUs: d('remote_reads') > 0 ? d('remote_read_us') / d('remote_reads') : null, ...clientOf(run),
      ...(dma === undefined ? {} : { dmaPerAccess: dma }), errors: run.errors };
  } finally {
    await stack.close();
  }
}

// ---- hash map: binary protocol, pd3-loadgen -----------------------------------------------------

/** Spawns the hash map; resolves when its stdout ready line arrives; `onListening` runs first. */
function startHashmap(args: string[], token: string, onListening: () => Promise<void>): Promise<{ child: ChildProcess; port: number; stats(): Promise<Record<string, number>> }> {
  return new Promise((resolve, reject) => {
    const child = spawnOnSide('host', HASHMAP, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, PD3_TOKEN: token } });
    const waiting: Array<(s: Record<string, number>) => void> = [];
    let errText = '';
    createInterface({ input: child.stderr! }).on('line', (line) => {
      errText += `${line}\n`;
      if (line.includes('"listening"')) onListening().catch(reject);
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = JSON.parse(line) as Record<string, unknown>;
      if (m.event === 'ready') {
        resolve({
          child, port: Number(m.port),
          stats: () => new Promise((r) => {
            waiting.push(r);
            child.stdin!.write('stats\n');
          }),
        });
      } else if (m.event === 'stats') {
        waiting.shift()?.(m as Record<string, number>);
      }
    });
    child.on('exit', (code) => reject(new Error(`pd3_hashmap exited with ${code}: ${errText.slice(-500)}`)));
  });
}

export async function runHashmap(mode: Mode, spec: RunSpec, onStep: (what: string) => void): Promise<ModeResult> {
  const token = randomBytes(16).toString('hex');
  const stack = new Stack();
  try {
    const ms = await memserverFor(spec, token);
    stack.push(() => ms.stop());
    const segment = `pd3-e2e-hm-${process.pid}-${randomBytes(3).toString('hex')}`;
    const port = await freePort();
    let clientPort = port;
    let agentPid: number | undefined;
    onStep('load');
    const hm = await startHashmap(['--mode', mode, '--listen', `127.0.0.1:${port}`, '--records', String(spec.records),
      ...(mode === 'local' ? [] : ['--cache-percent', String(spec.cachePercent)]), '--threads', '2', ...zoneWaitFlags(mode, spec),
      ...remoteFlags(mode, ms.port, segment)], token, async () => {
      if (mode !== 'pd3' && mode !== 'pd3-noprefetch') return;
      const agent = await agentFor(segment, ms.port, token, mode === 'pd3' ? ['--prefetch-parser', 'binary'] : [], port, spec);
      stack.push(() => agent.stop());
      agentPid = agent.child.pid!;
      if (mode === 'pd3' && spec.mirror === 'tee') clientPort = Number(agent.ready.teePort);
    });
    stack.push(async () => {
      hm.child.kill('SIGTERM');
      await new Promise((r) => hm.child.once('exit', r));
    });
    onStep('run');
    const before = await hm.stats();
    const window = measureWindow({ host: hm.child.pid!, dpu: agentPid, memserver: ms.child.pid! }, spec.warmupMs, spec.durationMs);
    // No --load: the hash map wrote keys 0..records-1 itself at start, with protocol.hpp's
    // load_value(key), which is the starting point pd3-loadgen's --verify assumes for the binary
    // protocol without --load (bench/loadgen/value_format.hpp), so every value read is checked.
    const run = await runLoadgen({ port: clientPort, protocol: 'binary', workload: 'B', distribution: 'uniform',
      records: spec.records, connections: CLIENT_LOAD.connections, pipeline: CLIENT_LOAD.pipeline, verify: true,
      warmupS: spec.warmupMs / 1000, durationS: spec.durationMs / 1000, seed: 7 });
    const cpu = cpuFigures(await window, run.kops);
    const after = await hm.stats();
    const d = (k: string): number => (after[k] ?? 0) - (before[k] ?? 0);
    return { app: 'hashmap', mode, kops: run.kops, p50Us: run.p50Us, p99Us: run.p99Us,
      hitRate: rate(d('zone_hits'), d('misses')), ...cpu, ...clientOf(run), errors: run.errors };
  } finally {
    await stack.close();
  }
}

// ---- page server: 4 KiB pages over gRPC -----------------------------------------------------------

export async function runPageServer(mode: Mode, spec: RunSpec, onStep: (what: string) => void): Promise<ModeResult> {
  const token = randomBytes(16).toString('hex');
  const stack = new Stack();
  const pages = Math.max(100, Math.floor(spec.records / 40));  // 4 KiB pages: ~the kv data size
  try {
    const ms = await memserverFor(spec, token);
    stack.push(() => ms.stop());
    const segment = `pd3-e2e-ps-${process.pid}-${randomBytes(3).toString('hex')}`;
    const port = await freePort();
    onStep('load');
    const serverReady = startDaemon(PAGE_CLI, ['--mode', mode, '--listen', `127.0.0.1:${port}`, '--pages', String(pages),
      '--cache-percent', String(spec.cachePercent), '--log-level', 'info', ...remoteFlags(mode, ms.port, segment),
      ...zoneWaitFlags(mode, spec)], token, { timeoutMs: 120000, side: 'host' });
    let target = `127.0.0.1:${port}`;
    let agentPid: number | undefined;
    if (mode === 'pd3' || mode === 'pd3-noprefetch') {
      const agent = await agentFor(segment, ms.port, token,
        mode === 'pd3' ? ['--prefetch-parser', 'grpc', '--prefetch-parser-config', PAGES_PARSER_CONFIG] : [], port, spec);
      stack.push(() => agent.stop());
      agentPid = agent.child.pid!;
      if (mode === 'pd3' && spec.mirror === 'tee') target = `127.0.0.1:${Number(agent.ready.teePort)}`;
    }
    const ps = await serverReady;
    stack.push(() => ps.stop());
    onStep('run');
    const stats = new PagesClient(target);
    const before = await stats.stats();
    await runLoad({ target, pages, callers: 16, durationMs: spec.warmupMs, ops: 1e9, workload: 'B', distribution: 'uniform', seed: 1 });
    const window = measureWindow({ host: ps.child.pid!, dpu: agentPid, memserver: ms.child.pid! }, 0, spec.durationMs);
    const r = await runLoad({ target, pages, callers: 16, durationMs: spec.durationMs, ops: 1e9, workload: 'B', distribution: 'uniform', seed: 2 });
    const cpu = cpuFigures(await window, r.throughput / 1000);
    const after = await stats.stats();
    stats.close();
    // The Stats RPC's field names: the .proto's snake_case, or camelCase as protobufjs may give them.
    const camel = (k: string): string => k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    const field = (o: Record<string, number | string>, k: string): number => Number(o[k] ?? o[camel(k)] ?? 0);
    const d = (k: string): number => field(after, k) - field(before, k);
    const misses = d('zone_hits') + d('remote_reads') + d('coalesced_misses');
    return { app: 'page-server', mode, kops: r.throughput / 1000, p50Us: r.p50Us, p99Us: r.p99Us,
      hitRate: rate(d('zone_hits'), misses), ...cpu, connections: null, pipeline: null, errors: r.errors };
  } finally {
    await stack.close();
  }
}

export const RUNNERS: Record<AppName, (mode: Mode, spec: RunSpec, onStep: (what: string) => void) => Promise<ModeResult>> = {
  'pd3-kv': runKv,
  hashmap: runHashmap,
  'page-server': runPageServer,
};
