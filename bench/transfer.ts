// transfer.ts — `npm run bench -- transfer`: the paper's Appendix A side by side. 64-byte writes
// and reads from a host process to a real pd3-memserver, (a) offloaded: through the shared
// request ring to a real pd3-agent, which batches them to the server — with the host library
// staging requests and publishing PUBLISH_BATCH at a time (pd3_host_config.publish_batch), and,
// as an extra row, publishing each at once; (b) host-issued: the host library's direct mode, the
// host paying for the transport itself (it sends what was queued since the last poll), with the
// same publish_batch: each handle stages PUBLISH_BATCH requests per hand-over to the direct
// path's connections, as the offloaded host does per ring publication. Same total cores: the offloaded
// run has 1 host thread + the agent's engine thread, the direct run 2 host threads. Direct mode
// registers the caller's buffers through its MRRC, as RDMA needs (docs/mrrc.md); an extra row runs
// it without (PD3_HOST_DIRECT_UNREGISTERED), which this build's TCP transport allows. The host side
// is bench/native/transfer.cpp (linked against libpd3host). In split layout (the default) the host
// program runs on the host CPUs, the agent and the memory server on the others (docs/benchmarks.md,
// "Core layout"). A last extra row runs the offloaded host against an agent that answers every
// request at once from memory (bench/native/instant_agent.cpp: no memory server, no sleep), which
// shows the host library's own cost per request apart from what waiting for a real agent adds.
// Before and after every run, bench/native/core_to_core.cpp times one cache line's round trip
// between the host's CPU and the agent's: in a VM, where the hypervisor places the two vCPUs
// changes what every ring-based row costs, and the runs print it so that a reader can tell.
// Last line: one JSON object.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HELP_OPTION, integerFlag, parseBenchCommand } from '../examples/harness/bench-command.js';
import { applyLayoutOptions, checkLayoutOptions, LAYOUT_OPTIONS, LAYOUT_USAGE, spawnOnSide, type CoreLayout } from '../examples/harness/core-layout.js';
import { median } from '../examples/harness/median.js';
import { startAgent, startMemserver } from '../examples/harness/processes.js';
import { MAX_PUBLISH_BATCH } from '../host/index.js';

const USAGE = `usage: npm run bench -- transfer [--quick] [--publish-batch N] [--layout split|shared] [--host-cpus LIST]
  --quick               one 3 s run per configuration instead of three of 6 s
  --publish-batch N     requests the host stages per publication, in both modes (1..${MAX_PUBLISH_BATCH}, default 32)
${LAYOUT_USAGE}`;
const args = parseBenchCommand('transfer', USAGE, () => {
  const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false },
    'publish-batch': { type: 'string', default: '32' }, ...HELP_OPTION, ...LAYOUT_OPTIONS } });
  checkLayoutOptions(values);
  integerFlag('--publish-batch', values['publish-batch'], 1, MAX_PUBLISH_BATCH);
  return values;
});
const quick = args.quick;
const layout: CoreLayout = applyLayoutOptions(args);

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(root, 'build', 'pd3_bench_transfer');
const INSTANT_AGENT = join(root, 'build', 'pd3_bench_instant_agent');
const CORE_TO_CORE = join(root, 'build', 'pd3_bench_core_to_core');
const SECONDS = quick ? 3 : 6;
const REPS = quick ? 1 : 3;
const WINDOW = 4096;
const LATENCY_READS = quick ? 2000 : 10000;
const PUBLISH_BATCH = Number(args['publish-batch']);

/** What one run of the host program reports (its last line). */
interface HostReport {
  mode: string;
  threads: number;
  ops: number;
  errors: number;
  mops: number;
  host_cpu_ns_per_op: number;
  /** The part of host_cpu_ns_per_op spent in the kernel: socket calls, futex waits and wake-ups. */
  host_sys_ns_per_op: number;
  host_cpu_cores: number;
  p50_us: number;
  p99_us: number;
}

/** One run: the host program's report, and the cache-line round trip between the two CPUs (ns)
 *  just before and just after it. */
interface Run extends HostReport {
  lineBefore: number | null;
  lineAfter: number | null;
}

// The two CPUs whose line round trip is timed: the host's first and the agent's first (split), or
// the first two this process may use (shared); null with fewer than two.
const PROBE_CPUS: [number, number] | null = layout.name === 'split'
  ? [layout.hostCpus[0]!, layout.otherCpus[0]!]
  : layout.hostCpus.length >= 2 ? [layout.hostCpus[0]!, layout.hostCpus[1]!] : null;

// One cache line's round trip between PROBE_CPUS, in ns (200 ms of round trips), or null.
function lineRoundTrip(): number | null {
  if (PROBE_CPUS === null) return null;
  const r = spawnSync(CORE_TO_CORE, PROBE_CPUS.map(String), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`${CORE_TO_CORE} ${PROBE_CPUS.join(' ')} exited with ${r.status ?? r.error?.message}`);
  return (JSON.parse(r.stdout) as { ns_per_round_trip: number }).ns_per_round_trip;
}

/** What runHost stops once the host program has exited. */
interface Stoppable {
  stop(): Promise<unknown>;
}

// Starts the instant agent on the agent's side of the layout; stop() ends it and checks it exited 0.
function startInstantAgent(segment: string): Promise<Stoppable> {
  const child = spawnOnSide('other', INSTANT_AGENT, [segment], { stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return Promise.resolve({
    async stop() {
      child.kill('SIGTERM');
      const code = await exited;
      if (code !== 0) throw new Error(`${INSTANT_AGENT} ${segment} exited with ${code}`);
    },
  });
}

// Runs the host program between two line round trips; `onSegment` is called with the segment
// name (offload: start the agent).
async function runHost(args: string[], onSegment?: (segment: string) => Promise<Stoppable>): Promise<Run> {
  const lineBefore = lineRoundTrip();
  const report = await runHostProgram(args, onSegment);
  return { ...report, lineBefore, lineAfter: lineRoundTrip() };
}

function runHostProgram(args: string[], onSegment?: (segment: string) => Promise<Stoppable>): Promise<HostReport> {
  return new Promise((resolve, reject) => {
    const child = spawnOnSide('host', BIN, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let agent: Promise<Stoppable> | null = null;
    let last = '';
    createInterface({ input: child.stdout! }).on('line', (line) => {
      last = line;
      const m = JSON.parse(line) as { segment?: string };
      if (m.segment !== undefined && onSegment) agent = onSegment(m.segment);
    });
    child.on('exit', (code) => {
      const done = async (): Promise<void> => {
        if (agent) await (await agent).stop();
        if (code !== 0) throw new Error(`${BIN} ${args.join(' ')} exited with ${code}`);
        resolve(JSON.parse(last) as HostReport);
      };
      done().catch(reject);
    });
  });
}

function lineText(r: Run): string {
  return r.lineBefore === null || r.lineAfter === null ? '-' : `${r.lineBefore.toFixed(0)}-${r.lineAfter.toFixed(0)}`;
}

const token = randomBytes(16).toString('hex');
const server = await startMemserver({ token, capacity: '4G' });
try {
  const common = ['--window', String(WINDOW), '--seconds', String(SECONDS), '--token', token];
  const offload: Run[] = [];
  const offload1: Run[] = [];
  const direct: Run[] = [];
  const direct1: Run[] = [];
  const directUnreg: Run[] = [];
  const instant: Run[] = [];
  for (let rep = 0; rep < REPS; ++rep) {
    // Interleaved, so drift in the machine's speed hits every configuration alike.
    offload.push(await runHost([...common, '--mode', 'offload', '--threads', '1', '--latency-reads', String(LATENCY_READS),
      '--publish-batch', String(PUBLISH_BATCH)], (segment) => startAgent(segment, [server.port], token)));
    offload1.push(await runHost([...common, '--mode', 'offload', '--threads', '1', '--publish-batch', '1'],
      (segment) => startAgent(segment, [server.port], token)));
    const directCommon = [...common, '--mode', 'direct', '--publish-batch', String(PUBLISH_BATCH), '--servers', `127.0.0.1:${server.port}`];
    direct.push(await runHost([...directCommon, '--threads', '2']));
    direct1.push(await runHost([...directCommon, '--threads', '1']));
    directUnreg.push(await runHost([...directCommon, '--threads', '2', '--register', '0']));
    instant.push(await runHost([...common, '--mode', 'offload', '--threads', '1', '--publish-batch', String(PUBLISH_BATCH)],
      startInstantAgent));
  }
  const row = (name: string, runs: Run[]): { mops: number; cpu: number; sys: number; cores: number } => {
    const r = { mops: median(runs.map((x) => x.mops)), cpu: median(runs.map((x) => x.host_cpu_ns_per_op)),
      sys: median(runs.map((x) => x.host_sys_ns_per_op)), cores: median(runs.map((x) => x.host_cpu_cores)) };
    console.log(`${name.padEnd(42)} ${r.mops.toFixed(3).padStart(8)} Mops/s  ${r.cpu.toFixed(0).padStart(6)} host ns/op ` +
      `(${r.sys.toFixed(0)} in the kernel)  ${r.cores.toFixed(2)} host cores  (runs, Mops/s / host ns/op / line round trip ns before-after: ` +
      `${runs.map((x) => `${x.mops.toFixed(3)}/${x.host_cpu_ns_per_op.toFixed(0)}/${lineText(x)}`).join(', ')})`);
    return r;
  };
  console.log(`transfer: 64 B writes+reads, window ${WINDOW}/thread, ${SECONDS} s x ${REPS} runs (median)`);
  const o = row(`offload (1 host thread + agent, batch ${PUBLISH_BATCH})`, offload);
  const o1 = row('offload (publish each at once, extra row)', offload1);
  const d = row('direct  (2 host threads)', direct);
  row('direct  (1 host thread, extra row)', direct1);
  const du = row('direct  (2 threads, unregistered, extra)', directUnreg);
  const oi = row(`offload, instant agent (batch ${PUBLISH_BATCH}, extra)`, instant);
  const p50 = median(offload.map((x) => x.p50_us));
  const p99 = median(offload.map((x) => x.p99_us));
  const lines = [offload, offload1, direct, direct1, directUnreg, instant].flat()
    .flatMap((r) => [r.lineBefore, r.lineAfter]).filter((x): x is number => x !== null);
  if (lines.length > 0) {
    console.log(`cache line round trip CPU ${PROBE_CPUS!.join(' <-> CPU ')}: median ${median(lines).toFixed(0)} ns, ` +
      `${Math.min(...lines).toFixed(0)}-${Math.max(...lines).toFixed(0)} over the runs`);
  }
  console.log(`single read through the agent: p50 ${p50.toFixed(1)} us, p99 ${p99.toFixed(1)} us (${LATENCY_READS} reads)`);
  console.log(`ratios: offload/direct throughput ${(o.mops / d.mops).toFixed(2)}, ` +
    `host CPU offload/direct ${(o.cpu / d.cpu).toFixed(3)} (target <= 0.4; against direct unregistered ${(o.cpu / du.cpu).toFixed(3)}; ` +
    `the instant agent's host against direct unregistered ${(oi.cpu / du.cpu).toFixed(3)})`);
  console.log(JSON.stringify({
    layout: layout!.name,
    offload_mops: +o.mops.toFixed(4),
    direct_mops: +d.mops.toFixed(4),
    offload_host_cpu_ns_per_op: +o.cpu.toFixed(1),
    direct_host_cpu_ns_per_op: +d.cpu.toFixed(1),
    offload_host_sys_ns_per_op: +o.sys.toFixed(1),
    direct_host_sys_ns_per_op: +d.sys.toFixed(1),
    publish_batch: PUBLISH_BATCH,
    offload_unbatched_mops: +o1.mops.toFixed(4),
    offload_unbatched_host_cpu_ns_per_op: +o1.cpu.toFixed(1),
    p50_us: +p50.toFixed(2),
    p99_us: +p99.toFixed(2),
    direct_1t_mops: +median(direct1.map((x) => x.mops)).toFixed(4),
    cpu_ratio: +(o.cpu / d.cpu).toFixed(4),
    throughput_ratio: +(o.mops / d.mops).toFixed(4),
    direct_unregistered_mops: +du.mops.toFixed(4),
    direct_unregistered_host_cpu_ns_per_op: +du.cpu.toFixed(1),
    cpu_ratio_unregistered: +(o.cpu / du.cpu).toFixed(4),
    offload_instant_mops: +oi.mops.toFixed(4),
    offload_instant_host_cpu_ns_per_op: +oi.cpu.toFixed(1),
    cpu_ratio_instant_unregistered: +(oi.cpu / du.cpu).toFixed(4),
    line_round_trip_ns: lines.length > 0 ? +median(lines).toFixed(1) : null,
    line_round_trip_ns_range: lines.length > 0 ? [+Math.min(...lines).toFixed(1), +Math.max(...lines).toFixed(1)] : null,
  }));
} finally {
  await server.stop();
}
