// prefetch.ts — `npm run bench -- prefetch`: DPU-direct prefetching (paper §6.2) side by side with
// the design it replaces, in one run. A real pd3-memserver, a real pd3-agent watching a host app
// (bench/native/prefetch.cpp) through the packet mirror (the tee proxy where raw sockets are not
// allowed), and a client reading keys the host does not hold, one at a time:
//   direct   — the agent sends each prefetch to the memory server itself (--prefetch-issuer agent);
//   via host — the agent hands each prefetch to the host as a hint, and the host sends it back
//              through the request ring (--prefetch-issuer host).
// Figure: the agent's median lead time, client request captured → item in the Loading Zone
// (pd3_agent_prefetch_lead_nanoseconds). Also the parse + Host View lookup rate of one agent core.
// With the packet mirror, the capture lag (kernel timestamp of a packet → the capture thread hands
// it on, pd3_agent_mirror_capture_lag_nanoseconds) of both capture rings side by side, direct
// issuer: the TPACKET_V3 ring (--mirror-ring v3, the baseline: blocks on a 1 ms timer) and the
// TPACKET_V2 ring (--mirror-ring v2, the candidate and the default: a wake-up per packet).
// Options: --help lists them; env PD3_BENCH_AGENT_ARGS adds agent flags (e.g. "--host-view off" for
// the breakdown in docs/benchmarks.md, "--mirror-spin-us 50"). In split layout (the default) the app
// runs on the host CPUs; its client thread, the agent, the memory server and the parse loop (which
// stands for an agent core) on the others.
// Last line: one JSON object.
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { HELP_OPTION, parseBenchCommand } from '../examples/harness/bench-command.js';
import { applyLayoutOptions, checkLayoutOptions, LAYOUT_OPTIONS, LAYOUT_USAGE, spawnOnSide, type CoreLayout, type Side } from '../examples/harness/core-layout.js';
import { median } from '../examples/harness/median.js';
import { startAgent, startMemserver, type Daemon } from '../examples/harness/processes.js';
import { metricsText } from '../examples/harness/scrape.js';

const USAGE = `usage: npm run bench -- prefetch [--quick] [--mirror afpacket|tee|dpdk] [--layout split|shared] [--host-cpus LIST]
  --quick               1 run each, fewer requests
  --mirror afpacket|tee|dpdk the packet mirror (default; the tee proxy where raw sockets are refused), the tee
                        proxy, or DPDK (af_packet driver) on a mirror port, clients in its namespace
                        (scripts/mirror-port.sh: needs root and a build with libdpdk-dev)
${LAYOUT_USAGE}`;
const options = parseBenchCommand('prefetch', USAGE, () => {
  const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, mirror: { type: 'string', default: 'afpacket' },
    ...HELP_OPTION, ...LAYOUT_OPTIONS } });
  if (values.mirror !== 'afpacket' && values.mirror !== 'tee' && values.mirror !== 'dpdk')
    throw new Error(`--mirror: afpacket, tee or dpdk, got '${values.mirror}'`);
  checkLayoutOptions(values);
  return values;
});
const layout: CoreLayout = applyLayoutOptions(options);

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(root, 'build', 'pd3_bench_prefetch');
const quick = options!.quick;
const REPS = quick ? 1 : 3;
const RECORDS = quick ? 20000 : 100000;
const REQUESTS = quick ? 1500 : 5000;
const PARSE_REQUESTS = quick ? 1000000 : 4000000;

type Issuer = 'agent' | 'host';
/** The packet mirror's receive ring (--mirror-ring). */
type Ring = 'v2' | 'v3';
/** The candidate ring (the agent's default) and the baseline it replaces. */
const CANDIDATE: Ring = 'v2';
const BASELINE: Ring = 'v3';

/** One lead-time run: what the app saw and what the agent measured. */
interface LeadRun {
  issuer: Issuer;
  ring: Ring;
  hits: number;
  misses: number;
  leadP50Us: number;
  leadP99Us: number;
  appWaitP50Us: number;
  produced: number;
  hints: number;
  /** Capture lag quantiles and the frames measured (0 with the tee proxy). */
  lagP50Us: number;
  lagP99Us: number;
  lagCount: number;
  /** The capture thread's CPU time over the whole run, µs per client request. */
  mirrorCpuUsPerRequest: number;
  polls: number;
  wakeups: number;
  spins: number;
  spinHits: number;
}

/** Spawns the native program; resolves with its stdout lines once it exits 0. `onLine` sees each
 *  line as it comes (the app mode's first line names its segment and port). */
function runNative(side: Side, args: string[], onLine?: (line: string, stdin: NodeJS.WritableStream) => void): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawnOnSide(side, BIN, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines: string[] = [];
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      onLine?.(line, child.stdin!);
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(lines) : reject(new Error(`${BIN} ${args.join(' ')} exited with ${code}`))));
  });
}

/** A sample of the agent's Prometheus text, by name and labels ("" when unlabelled). */
async function scrape(address: string): Promise<Map<string, number>> {
  const text = await metricsText(address);
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m) out.set(m[1]! + (m[2] ?? ''), Number(m[3]));
  }
  return out;
}

/** The mirror: `--mirror tee` asks for the tee proxy; afpacket (the default) needs CAP_NET_RAW and
 *  falls back to the tee proxy without it. */
let mirror = options!.mirror as 'afpacket' | 'tee' | 'dpdk';

/** --mirror dpdk: the mirror port (scripts/mirror-port.sh) the app listens behind, its clients'
 *  namespace, and the agent's DPDK flags (af_packet driver on the capture veth). */
const MIRROR_PORT_SCRIPT = join(root, 'scripts', 'mirror-port.sh');
const mirrorPort = mirror === 'dpdk' ? openMirrorPort() : null;

function openMirrorPort(): { name: string; appIp: string; agentArgs: string[] } {
  const name = `pd3b${process.pid % 100000}`;
  const subnet = `10.215.${process.pid % 250}`;
  const up = spawnSync(MIRROR_PORT_SCRIPT, ['up', name, subnet], { encoding: 'utf8' });
  if (up.status !== 0) throw new Error(`--mirror dpdk needs a mirror port: ${(up.stdout + up.stderr).trim()}`);
  process.on('exit', () => spawnSync(MIRROR_PORT_SCRIPT, ['down', name]));
  // A stop signal takes the mirror port down too (a SIGKILL cannot: scripts/mirror-port.sh down NAME).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(128 + (signal === 'SIGINT' ? 2 : 15)));
  const vdev = `--vdev=net_af_packet0,iface=${name}p,blocksz=32768,framesz=32768`;
  return {
    name,
    appIp: `${subnet}.1`,
    agentArgs: [`--dpdk-args=--no-huge --no-pci --no-shconf -m 256 --no-telemetry ${vdev}`, '--dpdk-port', 'net_af_packet0'],
  };
}

async function leadRun(issuer: Issuer, ring: Ring, memserverPort: number, token: string): Promise<LeadRun> {
  let agent: Daemon | null = null;
  let failure: unknown = null;
  const start = async (segment: string, appPort: number, stdin: NodeJS.WritableStream): Promise<void> => {
    const args = (m: string): string[] => [
      '--prefetch-parser', 'binary', '--mirror', m, '--app', `${mirrorPort?.appIp ?? '127.0.0.1'}:${appPort}`, '--prefetch-issuer', issuer,
      '--metrics', '127.0.0.1:0',
      ...(m === 'tee' ? ['--tee-listen', '127.0.0.1:0'] : m === 'dpdk' ? mirrorPort!.agentArgs : ['--mirror-ring', ring]),
      ...(process.env.PD3_BENCH_AGENT_ARGS ?? '').split(' ').filter(Boolean),
    ];
    try {
      agent = await startAgent(segment, [memserverPort], token, args(mirror));
    } catch (e) {
      if (mirror !== 'afpacket') throw e;
      console.log(`packet mirror unavailable here (${(e as Error).message.split('\n')[0]}); using the tee proxy`);
      mirror = 'tee';
      agent = await startAgent(segment, [memserverPort], token, args(mirror));
    }
    const clientPort = mirror === 'tee' ? Number(agent.ready.teePort) : appPort;
    stdin.write(`go ${clientPort}\n`);
  };
  let started: Promise<void> | null = null;
  // The client thread stands for another machine: in split layout it is pinned to an other CPU.
  const clientCpu = layout!.name === 'split' ? ['--client-cpu', String(layout!.otherCpus[0])] : [];
  const lines = await runNative('host',
    ['app', '--records', String(RECORDS), '--requests', String(REQUESTS), '--interval-us', '200', ...clientCpu,
      ...(mirrorPort === null ? [] : ['--app-ip', mirrorPort.appIp, '--client-netns', mirrorPort.name])],
    (line, stdin) => {
      if (started !== null) return;
      const m = JSON.parse(line) as { segment: string; port: number };
      started = start(m.segment, m.port, stdin).catch((e: unknown) => {
        failure = e;
        stdin.end();  // the app stops waiting for "go" and exits with an error
      });
    },
  );
  await started;
  if (failure !== null) throw failure;
  const a = agent as Daemon | null;
  if (a === null) throw new Error('the agent did not start');
  try {
    const app = JSON.parse(lines[lines.length - 1]!) as { hits: number; misses: number; app_wait_p50_us: number };
    const m = await scrape(String(a.ready.metrics));
    const get = (name: string): number => {
      const v = m.get(name);
      if (v === undefined) throw new Error(`agent metrics lack ${name}: ${[...m.keys()].filter((k) => k.includes("prefetch")).join(" ")}`);
      return v;
    };
    return {
      issuer,
      ring,
      hits: app.hits,
      misses: app.misses,
      appWaitP50Us: app.app_wait_p50_us,
      leadP50Us: get('pd3_agent_prefetch_lead_nanoseconds{quantile="0.5"}') / 1000,
      leadP99Us: get('pd3_agent_prefetch_lead_nanoseconds{quantile="0.99"}') / 1000,
      produced: get('pd3_agent_prefetch_produced_total'),
      hints: get('pd3_agent_prefetch_hints_total'),
      lagP50Us: get('pd3_agent_mirror_capture_lag_nanoseconds{quantile="0.5"}') / 1000,
      lagP99Us: get('pd3_agent_mirror_capture_lag_nanoseconds{quantile="0.99"}') / 1000,
      lagCount: get('pd3_agent_mirror_capture_lag_total'),
      mirrorCpuUsPerRequest: get('pd3_agent_mirror_cpu_nanoseconds_total') / 1000 / REQUESTS,
      polls: get('pd3_agent_mirror_polls_total'),
      wakeups: get('pd3_agent_mirror_wakeups_total'),
      spins: get('pd3_agent_mirror_spins_total'),
      spinHits: get('pd3_agent_mirror_spin_hits_total'),
    };
  } finally {
    await a.stop();
  }
}

const token = randomBytes(16).toString('hex');
const server = await startMemserver({ token, capacity: '2G' });
const runs: Record<Issuer, LeadRun[]> = { agent: [], host: [] };
/** Direct issuer on the baseline ring (packet mirror only). */
const baselineRuns: LeadRun[] = [];
try {
  for (let rep = 0; rep < REPS; ++rep) {
    // Interleaved, so drift in the machine's speed hits every setting alike.
    for (const issuer of ['agent', 'host'] as const) runs[issuer].push(await leadRun(issuer, CANDIDATE, server.port, token));
    if (mirror === 'afpacket') baselineRuns.push(await leadRun('agent', BASELINE, server.port, token));
  }
} finally {
  await server.stop();
}

const parseLines = await runNative('other', ['parse', '--requests', String(PARSE_REQUESTS), '--reps', quick ? '3' : '5']);
const parse = JSON.parse(parseLines[parseLines.length - 1]!) as { resp_mreq_s: number; binary_mreq_s: number };

const row = (name: string, rs: LeadRun[]): { p50: number; p99: number; hit: number } => {
  const r = {
    p50: median(rs.map((x) => x.leadP50Us)),
    p99: median(rs.map((x) => x.leadP99Us)),
    hit: median(rs.map((x) => x.hits / (x.hits + x.misses))),
  };
  console.log(
    `${name.padEnd(30)} lead p50 ${r.p50.toFixed(2).padStart(7)} us  p99 ${r.p99.toFixed(2).padStart(7)} us  ` +
      `zone hits ${(100 * r.hit).toFixed(1).padStart(5)}%  app wait p50 ${median(rs.map((x) => x.appWaitP50Us)).toFixed(2)} us  ` +
      `(runs p50: ${rs.map((x) => x.leadP50Us.toFixed(2)).join(', ')}; hints ${rs.map((x) => x.hints).join(', ')})`,
  );
  return r;
};
console.log(`prefetch lead time, ${REQUESTS} reads of keys the host lacks per run, ${REPS} run(s) each, mirror ${mirror}`);
const direct = row('direct (agent issues)', runs.agent);
const viaHost = row('via host (hint → host → ring)', runs.host);
console.log(`via_host / direct: ${(viaHost.p50 / direct.p50).toFixed(3)} (paper: the direct path is 24% faster, target >= 1.24)`);

/** Capture lag and its cost for one ring (direct issuer), medians over the runs. */
interface LagRow {
  p50: number;
  p99: number;
  leadP50: number;
  hit: number;
  appWait: number;
  cpuUs: number;
}
const lagRow = (name: string, rs: LeadRun[]): LagRow => {
  const r = {
    p50: median(rs.map((x) => x.lagP50Us)),
    p99: median(rs.map((x) => x.lagP99Us)),
    leadP50: median(rs.map((x) => x.leadP50Us)),
    hit: median(rs.map((x) => x.hits / (x.hits + x.misses))),
    appWait: median(rs.map((x) => x.appWaitP50Us)),
    cpuUs: median(rs.map((x) => x.mirrorCpuUsPerRequest)),
  };
  const last = rs[rs.length - 1]!;
  console.log(
    `${name.padEnd(30)} capture lag p50 ${r.p50.toFixed(2).padStart(8)} us  p99 ${r.p99.toFixed(2).padStart(8)} us  ` +
      `app wait p50 ${r.appWait.toFixed(2).padStart(7)} us  zone hits ${(100 * r.hit).toFixed(1).padStart(5)}%  ` +
      `capture CPU ${r.cpuUs.toFixed(2)} us/request  (runs p99: ${rs.map((x) => x.lagP99Us.toFixed(1)).join(', ')}; ` +
      `last run: ${last.lagCount} frames, ${last.polls} polls, ${last.wakeups} woken, ${last.spins} spins, ${last.spinHits} hit)`,
  );
  return r;
};
let candidate: LagRow | null = null;
let baseline: LagRow | null = null;
if (mirror === 'afpacket') {
  console.log('capture lag, kernel timestamp → capture thread hands the packet on (direct issuer):');
  baseline = lagRow(`${BASELINE} ring (baseline)`, baselineRuns);
  candidate = lagRow(`${CANDIDATE} ring (candidate)`, runs.agent);
  console.log(`capture lag p99: ${candidate.p99.toFixed(2)} us (target <= 100 us), ${(baseline.p99 / candidate.p99).toFixed(1)}x below ${BASELINE}`);
}
if (mirror === 'dpdk') {
  console.log('capture lag, previous rx burst call → capture thread hands the packet on (direct issuer, back-off included):');
  candidate = lagRow('dpdk af_packet, mirror port', runs.agent);
}
console.log(`parse + Host View lookup, one core: RESP ${parse.resp_mreq_s.toFixed(2)} Mreq/s, binary ${parse.binary_mreq_s.toFixed(2)} Mreq/s`);
const us = (v: number | undefined): number | null => (v === undefined ? null : Number(v.toFixed(3)));
console.log(
  JSON.stringify({
    direct_us: Number(direct.p50.toFixed(3)),
    via_host_us: Number(viaHost.p50.toFixed(3)),
    parse_lookup_mreq_s: parse.resp_mreq_s,
    ratio: Number((viaHost.p50 / direct.p50).toFixed(4)),
    direct_p99_us: Number(direct.p99.toFixed(3)),
    via_host_p99_us: Number(viaHost.p99.toFixed(3)),
    direct_hit_rate: Number(direct.hit.toFixed(4)),
    via_host_hit_rate: Number(viaHost.hit.toFixed(4)),
    binary_parse_lookup_mreq_s: parse.binary_mreq_s,
    mirror,
    layout: layout!.name,
    mirror_ring: mirror === 'afpacket' ? CANDIDATE : null,
    capture_lag_p50_us: us(candidate?.p50),
    capture_lag_p99_us: us(candidate?.p99),
    capture_cpu_us_per_request: us(candidate?.cpuUs),
    app_wait_p50_us: us(candidate?.appWait),
    baseline_ring: mirror === 'afpacket' ? BASELINE : null,
    baseline_capture_lag_p50_us: us(baseline?.p50),
    baseline_capture_lag_p99_us: us(baseline?.p99),
    baseline_capture_cpu_us_per_request: us(baseline?.cpuUs),
    baseline_app_wait_p50_us: us(baseline?.appWait),
    baseline_direct_us: us(baseline?.leadP50),
    baseline_direct_hit_rate: baseline === null ? null : Number(baseline.hit.toFixed(4)),
  }),
);
