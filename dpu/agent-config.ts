// agent-config.ts — pd3-agent's settings (flags and config keys), their checks and defaults, and
// the AgentOptions they build.
import { optionsFromObject, parseCommand, withoutUndefined, type Command, type SettingLayers } from '../cli/config.js';
import type { Endpoint } from '../cli/endpoint.js';
import { renderHelp } from '../cli/help.js';
import { LOG_LEVELS, type LogLevel } from '../cli/logger.js';
import { choice, decimal, endpoint, endpointList, endpointOrOff, integer, onOff, path, size, text } from '../cli/settings.js';
import { POOL_SETTINGS, tenantName, type PoolOptions } from '../cli/pool-settings.js';
import { resolveToken, TOKEN_MAX_BYTES } from '../cli/token.js';
import { UsageError } from '../cli/usage-error.js';
import { DEFAULT_POOL_PREFIX } from '../common/pool-record.js';
import type { NativeDpdkOptions } from './native.js';

/** Every setting of pd3-agent, by config key. */
export const AGENT_SETTINGS = {
  segment: text(255, {
    flag: 'segment',
    arg: 'NAME',
    help: 'the host segment to serve: the name the host library created (/dev/shm/NAME)',
  }),
  servers: endpointList(
    { anyPort: false, ipv4Only: false },
    {
      flag: 'servers',
      help: 'the memory servers (pd3-memserver --listen addresses), each with a distinct --server-id; or --etcd',
    },
  ),
  etcd: POOL_SETTINGS.etcd,
  etcdPrefix: POOL_SETTINGS.etcdPrefix,
  token: text(TOKEN_MAX_BYTES, {
    flag: 'token',
    help:
      'auth token presented to every memory server ' +
      '(visible to other users in ps: prefer --token-file or PD3_TOKEN)',
  }),
  tokenFile: path({
    flag: 'token-file',
    arg: 'FILE',
    help: 'read the auth token from FILE (a trailing line break is ignored)',
  }),
  tenant: tenantName({
    flag: 'tenant',
    help:
      "the tenant the host's app is: the agent reaches only its regions and keys, and the token is then " +
      "the tenant's credential (pd3-memserver credential --tenant NAME)",
    fallback: 'the default tenant',
  }),
  maxBatchRecords: integer(1, 1 << 20, {
    flag: 'max-batch-records',
    help: 'request records per frame at most',
    fallback: '4096',
  }),
  maxBatchBytes: size(4096, 2 ** 30, {
    flag: 'max-batch-bytes',
    help: "request frame bytes at most (keep it within the servers' --max-frame)",
    fallback: '1M',
  }),
  batchDelayUs: integer(0, 1_000_000, {
    flag: 'batch-delay-us',
    help: 'hold a small batch this long for more requests to join it; 0 sends at once',
    fallback: '0',
  }),
  maxOutstanding: integer(1, 1024, {
    flag: 'max-outstanding',
    help: 'request frames in flight per server',
    fallback: '8',
  }),
  responseBuffer: size(65536, 2 ** 36, {
    flag: 'response-buffer',
    help: 'size of the buffer responses from all servers land in',
    fallback: '16M',
  }),
  requestTimeoutMs: integer(1, 3_600_000, {
    flag: 'request-timeout-ms',
    help: 'a server that answers nothing for this long is dropped and its requests fail as unavailable',
    fallback: '2000',
  }),
  connectTimeoutMs: integer(1, 600_000, {
    flag: 'connect-timeout-ms',
    help: 'time allowed to connect and say hello',
    fallback: '500',
  }),
  reconnectMs: integer(1, 3_600_000, {
    flag: 'reconnect-ms',
    help: 'delay between attempts to reach a lost server',
    fallback: '200',
  }),
  idleSpinUs: integer(0, 1_000_000, {
    flag: 'idle-spin-us',
    help: 'busy-poll this long after the last work before sleeping',
    fallback: '50',
  }),
  dmaLatencyUs: decimal(0, 1000, {
    flag: 'dma-latency-us',
    help:
      'model host memory as a DPU reaches it: this many µs per DMA operation (reads and atomics wait, ' +
      'writes are posted until a fence), with every operation counted (pd3_agent_dma_* metrics); ' +
      'absent: plain shared memory, uncounted (docs/transfer-engine.md)',
    fallback: 'off',
  }),
  idleSleepUs: integer(0, 1000, {
    flag: 'idle-sleep-us',
    help: 'then sleep this long between checks of the request ring, doubling while idle',
    fallback: '20',
  }),
  idleSleepMaxUs: integer(0, 1000, {
    flag: 'idle-sleep-max-us',
    help: 'longest idle sleep; with nothing in flight a host request wakes the agent at once (doorbell), while responses are due it waits at most this long',
    fallback: '1000',
  }),
  placement: choice(['p2c', 'most-free', 'random'], {
    flag: 'placement',
    help: 'where a new region goes: p2c = the one of two servers drawn at random with more free bytes; most-free; random',
    fallback: 'p2c',
  }),
  refractionMs: integer(0, 3_600_000, {
    flag: 'refraction-ms',
    help: 'a server that refused an allocation for lack of room gets no new regions this long, unless no other server can take one',
    fallback: '1000',
  }),
  hostView: onOff({ flag: 'host-view', help: 'keep a Host View of the keys the host caches', fallback: 'on' }),
  hostViewCapacity: integer(1, 2 ** 32, {
    flag: 'host-view-capacity',
    help: 'keys the Host View holds',
    fallback: '1048576',
  }),
  hostViewShards: integer(0, 64, {
    flag: 'host-view-shards',
    help: 'Host View shard threads; 0: none, the engine thread keeps Host View itself (no hand-offs: best while the agent has one core)',
    fallback: '0',
  }),
  hostViewSpinUs: integer(0, 1_000_000, {
    flag: 'host-view-spin-us',
    help: 'an idle Host View shard busy-polls this long before it sleeps (worth it only on cores of its own)',
    fallback: '0',
  }),
  prefetchParser: text(4096, {
    flag: 'prefetch-parser',
    arg: 'NAME|FILE',
    help: "parse client requests with this parser (resp, binary, or a plug-in library) and prefetch what the host lacks; unset: no prefetching",
  }),
  prefetchParserConfig: text(4096, {
    flag: 'prefetch-parser-config',
    arg: 'FILE',
    help: 'configuration file of a TS parser (grpc: its method → key mapping, docs/grpc-parser.md; a module: passed to its createParser)',
  }),
  mirror: choice(['afpacket', 'tee', 'dpdk'] as const, {
    flag: 'mirror',
    help: "how the agent sees client requests: capture the app's traffic (afpacket, needs CAP_NET_RAW), proxy it (tee), or receive a mirror of it on a DPDK port (dpdk, docs/mirror.md)",
    fallback: 'afpacket',
  }),
  app: endpoint(
    { anyPort: false, ipv4Only: true },
    { flag: 'app', help: "the app's client-facing address (afpacket: watched; tee: where the proxy forwards)" },
  ),
  teeListen: endpoint(
    { anyPort: true, ipv4Only: true },
    { flag: 'tee-listen', help: 'tee only: the public address clients connect to' },
  ),
  mirrorInterface: text(64, { flag: 'mirror-interface', help: 'afpacket only: the interface to capture on', fallback: 'lo' }),
  mirrorRing: choice(['v2', 'v3'] as const, {
    flag: 'mirror-ring',
    help: 'afpacket only: the capture ring; v2 hands each packet to the parser as it arrives (tens of µs), v3 in blocks the kernel hands over when full or after 1 ms',
    fallback: 'v2',
  }),
  mirrorSpinUs: integer(0, 1000, {
    flag: 'mirror-spin-us',
    help: 'afpacket only: after captured packets, check the ring this long before sleeping (saves a wake-up when the next packet follows soon; spinning costs CPU)',
    fallback: '0',
  }),
  mirrorSliceUs: integer(0, 100_000, {
    flag: 'mirror-slice-us',
    help: "afpacket only: the capture thread's scheduler slice (Linux >= 6.12; at least 100): a short one lets it run as soon as a packet arrives on busy cores; 0 keeps the kernel's default",
    fallback: '100',
  }),
  dpdkArgs: text(4096, {
    flag: 'dpdk-args',
    arg: 'ARGS',
    help: 'dpdk only: EAL arguments separated by spaces, no quoting (no argument may contain a space); give them as --dpdk-args="..." since they start with dashes, e.g. "--no-huge --no-pci --no-shconf -m 256 --vdev=net_af_packet0,iface=m1,framesz=32768"',
    fallback: "none: the EAL's defaults (hugepages, every PCI device)",
  }),
  dpdkPort: text(256, {
    flag: 'dpdk-port',
    arg: 'PORT',
    help: 'dpdk only: the port to receive on: a port id, a port name (net_af_packet0, a PCI address), or a vdev the agent plugs in at start and removes at exit (net_af_packet0,iface=m1)',
    fallback: '0',
  }),
  dpdkMbufs: integer(576, 1 << 20, {
    flag: 'dpdk-mbufs',
    help: 'dpdk only: mbufs in the receive pool (at least 512 rx descriptors + a burst + 32)',
    fallback: '1023',
  }),
  dpdkMbufBytes: size(1024, 65407, {
    flag: 'dpdk-mbuf-bytes',
    help: "dpdk only: packet bytes per mbuf; raised to the largest framesz= of --dpdk-args and --dpdk-port (af_packet's frames must fit)",
    fallback: '2048',
  }),
  dpdkBurst: integer(1, 512, { flag: 'dpdk-burst', help: 'dpdk only: packets per rx burst', fallback: '32' }),
  dpdkSpinUs: integer(0, 1_000_000, {
    flag: 'dpdk-spin-us',
    help: 'dpdk only: after the last packet, busy-poll the port this long before backing off (costs a core while it spins)',
    fallback: '20',
  }),
  dpdkSleepUs: integer(1, 100_000, {
    flag: 'dpdk-sleep-us',
    help: 'dpdk only: then sleep this long between polls, doubling while idle',
    fallback: '1',
  }),
  dpdkSleepMaxUs: integer(1, 100_000, {
    flag: 'dpdk-sleep-max-us',
    help: 'dpdk only: longest back-off sleep: the most a lone packet waits in the port, and an idle thread polls about 1/this often',
    fallback: '200',
  }),
  dpdkPromiscuous: onOff({
    flag: 'dpdk-promiscuous',
    help: "dpdk only: put the port in promiscuous mode (a mirror port receives other hosts' MACs); its previous state is restored at exit",
    fallback: 'on',
  }),
  prefetchIssuer: choice(['agent', 'host'] as const, {
    flag: 'prefetch-issuer',
    help: 'who sends each prefetch to the memory server: the agent (DPU-direct) or the host after a hint from the agent (the slower design of the paper\'s §6.2, for comparison)',
    fallback: 'agent',
  }),
  prefetchInflight: integer(1, 16384, {
    flag: 'prefetch-inflight',
    help: 'prefetches between a client READ and the answer, at most',
    fallback: '4096',
  }),
  prefetchItemBytes: size(1, 2 ** 31 - 1, {
    flag: 'prefetch-item-bytes',
    help: 'largest item a prefetch brings into the Loading Zone',
    fallback: '64K',
  }),
  metrics: endpointOrOff(
    { anyPort: true, ipv4Only: false },
    {
      flag: 'metrics',
      help: 'serve GET /metrics (Prometheus) and GET /healthz here; port 0 picks a free one; off disables',
      fallback: '127.0.0.1:0',
    },
  ),
  logLevel: choice(LOG_LEVELS, {
    flag: 'log-level',
    help: 'lowest level of log lines written to stderr',
    fallback: 'info',
  }),
};

/** pd3-agent's settings shaped like its config file (servers as an array or a comma list). */
export interface AgentSettings {
  segment?: string;
  servers?: string[] | string;
  etcd?: string[] | string;
  etcdPrefix?: string;
  token?: string;
  tokenFile?: string;
  tenant?: string;
  maxBatchRecords?: number;
  maxBatchBytes?: number | string;
  batchDelayUs?: number;
  maxOutstanding?: number;
  responseBuffer?: number | string;
  requestTimeoutMs?: number;
  connectTimeoutMs?: number;
  reconnectMs?: number;
  idleSpinUs?: number;
  dmaLatencyUs?: number;
  idleSleepUs?: number;
  idleSleepMaxUs?: number;
  placement?: 'p2c' | 'most-free' | 'random';
  refractionMs?: number;
  hostView?: boolean;
  hostViewCapacity?: number;
  hostViewShards?: number;
  hostViewSpinUs?: number;
  prefetchParser?: string;
  prefetchParserConfig?: string;
  mirror?: 'afpacket' | 'tee' | 'dpdk';
  app?: string;
  teeListen?: string;
  mirrorInterface?: string;
  mirrorRing?: 'v2' | 'v3';
  mirrorSpinUs?: number;
  mirrorSliceUs?: number;
  dpdkArgs?: string;
  dpdkPort?: string;
  dpdkMbufs?: number;
  dpdkMbufBytes?: number | string;
  dpdkBurst?: number;
  dpdkSpinUs?: number;
  dpdkSleepUs?: number;
  dpdkSleepMaxUs?: number;
  dpdkPromiscuous?: boolean;
  prefetchIssuer?: 'agent' | 'host';
  prefetchInflight?: number;
  prefetchItemBytes?: number | string;
  metrics?: string;
  logLevel?: LogLevel;
}

/** The DPDK capture backend's checked settings (--dpdk-*): the native options, with the EAL
 *  arguments and the port required. */
export type DpdkOptions = NativeDpdkOptions & { ealArgs: string; port: string };

/** Checked settings of an agent: what Agent.start runs. Tuning fields left absent take the
 *  Transfer Engine's defaults (shown in --help). */
export interface AgentOptions {
  segment: string;
  /** Empty when the servers come from the pool (`pool`). */
  servers: Endpoint[];
  /** The pool in etcd whose registered memory servers the agent serves, read at start; absent:
   *  `servers`. */
  pool?: Pick<PoolOptions, 'endpoints' | 'prefix'>;
  token: string;
  /** Absent: the default tenant. */
  tenant?: string;
  maxBatchRecords?: number;
  maxBatchBytes?: number;
  batchDelayUs?: number;
  maxOutstanding?: number;
  responseBuffer?: number;
  requestTimeoutMs?: number;
  connectTimeoutMs?: number;
  reconnectMs?: number;
  idleSpinUs?: number;
  /** µs per DMA operation with the latency-and-accounting backend; absent: shared memory. */
  dmaLatencyUs?: number;
  idleSleepUs?: number;
  idleSleepMaxUs?: number;
  /** Absent: p2c. */
  placement?: 'p2c' | 'most-free' | 'random';
  /** Absent: 1000. */
  refractionMs?: number;
  hostView: boolean;
  hostViewCapacity?: number;
  hostViewShards?: number;
  hostViewSpinUs?: number;
  /** DPU-direct prefetching; absent: off. */
  prefetch?: {
    /** resp, binary, grpc, a native plug-in library (.so) or a TS/JS module (.js/.mjs). */
    parser: string;
    /** A TS parser's configuration file. */
    parserConfig?: string;
    mirror: 'afpacket' | 'tee' | 'dpdk';
    app: Endpoint;
    teeListen?: Endpoint;
    interface: string;
    /** afpacket: the capture ring; absent: the native default (v2). */
    ring?: 'v2' | 'v3';
    /** afpacket: µs to spin on an empty ring before sleeping; absent: the native default (0). */
    spinUs?: number;
    /** afpacket: the capture thread's scheduler slice in µs, 0 = the kernel's; absent: the native default (100). */
    sliceUs?: number;
    /** dpdk: the DPDK port and its thread; absent keys take the native defaults. */
    dpdk?: DpdkOptions;
    /** Who sends each prefetch; absent: the agent. */
    issuer?: 'agent' | 'host';
    maxInflight?: number;
    maxItemBytes?: number;
  };
  /** null: no metrics endpoint. */
  metrics: Endpoint | null;
  logLevel: LogLevel;
}

// Where the memory servers come from: --servers, or the pool in etcd (exactly one of them).
function serverSource(servers: Endpoint[] | undefined, etcd: string[] | undefined, prefix: string | undefined,
  fileLabel: string): Pick<AgentOptions, 'servers' | 'pool'> {
  if (etcd === undefined) {
    if (prefix !== undefined) throw new UsageError('--etcd-prefix needs --etcd');
    return { servers: required(servers, 'servers', 'servers', fileLabel) };
  }
  if (servers !== undefined) throw new UsageError('give the memory servers by --servers or by --etcd, not both');
  return { servers: [], pool: { endpoints: etcd, prefix: prefix ?? DEFAULT_POOL_PREFIX } };
}

function required<T>(value: T | undefined, flag: string, key: string, fileLabel: string): T {
  if (value === undefined) {
    const where = fileLabel === 'options' ? `option "${key}"` : `--${flag} (or "${key}" in the config file)`;
    throw new UsageError(`${where} is required`);
  }
  return value;
}

// The prefetch settings, checked together: a parser needs the app's address, tee a listen address.
function prefetchOptions(v: SettingLayers<typeof AGENT_SETTINGS>['merged'], fileLabel: string): AgentOptions['prefetch'] {
  if (v.prefetchParser === undefined) {
    if (v.app !== undefined || v.teeListen !== undefined || v.prefetchIssuer !== undefined || v.prefetchParserConfig !== undefined)
      throw new UsageError('--app, --tee-listen, --prefetch-issuer and --prefetch-parser-config only apply with --prefetch-parser');
    return undefined;
  }
  const mirror = v.mirror ?? 'afpacket';
  const app = required(v.app, 'app', 'app', fileLabel);
  if (mirror === 'tee' && v.teeListen === undefined) throw new UsageError('--mirror tee needs --tee-listen HOST:PORT');
  if (mirror !== 'afpacket' && (v.mirrorRing !== undefined || v.mirrorSpinUs !== undefined || v.mirrorSliceUs !== undefined))
    throw new UsageError('--mirror-ring, --mirror-spin-us and --mirror-slice-us only apply with --mirror afpacket');
  if (mirror === 'dpdk' && v.mirrorInterface !== undefined)
    throw new UsageError('--mirror-interface does not apply with --mirror dpdk: give the port by --dpdk-port (or a --vdev in --dpdk-args)');
  return withoutUndefined({
    parser: v.prefetchParser,
    parserConfig: v.prefetchParserConfig,
    mirror,
    app,
    teeListen: v.teeListen,
    interface: v.mirrorInterface ?? 'lo',
    ring: v.mirrorRing,
    spinUs: v.mirrorSpinUs,
    sliceUs: v.mirrorSliceUs,
    dpdk: dpdkOptions(v, mirror),
    issuer: v.prefetchIssuer ?? 'agent',
    maxInflight: v.prefetchInflight,
    maxItemBytes: v.prefetchItemBytes,
  });
}

// The --dpdk-* settings: only with --mirror dpdk, the back-off's sleeps in order, enough mbufs.
function dpdkOptions(v: SettingLayers<typeof AGENT_SETTINGS>['merged'], mirror: string): DpdkOptions | undefined {
  const given = [v.dpdkArgs, v.dpdkPort, v.dpdkMbufs, v.dpdkMbufBytes, v.dpdkBurst, v.dpdkSpinUs, v.dpdkSleepUs,
    v.dpdkSleepMaxUs, v.dpdkPromiscuous].some((x) => x !== undefined);
  if (mirror !== 'dpdk') {
    if (given) throw new UsageError('the --dpdk-* settings only apply with --mirror dpdk');
    return undefined;
  }
  const sleepMin = v.dpdkSleepUs ?? 1;
  const sleepMax = v.dpdkSleepMaxUs ?? 200;
  if (sleepMin > sleepMax) throw new UsageError(`--dpdk-sleep-us ${sleepMin} is more than --dpdk-sleep-max-us ${sleepMax}`);
  const burst = v.dpdkBurst ?? 32;
  if (v.dpdkMbufs !== undefined && v.dpdkMbufs < 512 + burst + 32)
    throw new UsageError(`--dpdk-mbufs ${v.dpdkMbufs} cannot fill 512 rx descriptors plus a burst of ${burst} (at least ${512 + burst + 32})`);
  const port = (v.dpdkPort ?? '0').trim();
  if (port === '' || /\s/.test(port)) throw new UsageError(`--dpdk-port '${v.dpdkPort ?? ''}' must be one word (a port id, name or vdev)`);
  return withoutUndefined({
    ealArgs: v.dpdkArgs ?? '',
    port,
    mbufs: v.dpdkMbufs,
    mbufBytes: v.dpdkMbufBytes,
    burst: v.dpdkBurst,
    spinUs: v.dpdkSpinUs,
    sleepMinUs: v.dpdkSleepUs,
    sleepMaxUs: v.dpdkSleepMaxUs,
    promiscuous: v.dpdkPromiscuous,
  });
}

function build(l: SettingLayers<typeof AGENT_SETTINGS>, env: NodeJS.ProcessEnv): AgentOptions {
  const v = l.merged;
  return withoutUndefined({
    segment: required(v.segment, 'segment', 'segment', l.fileLabel),
    ...serverSource(v.servers, v.etcd, v.etcdPrefix, l.fileLabel),
    token: resolveToken(l.flags, l.file, l.fileLabel, env.PD3_TOKEN),
    tenant: v.tenant,
    maxBatchRecords: v.maxBatchRecords,
    maxBatchBytes: v.maxBatchBytes,
    batchDelayUs: v.batchDelayUs,
    maxOutstanding: v.maxOutstanding,
    responseBuffer: v.responseBuffer,
    requestTimeoutMs: v.requestTimeoutMs,
    connectTimeoutMs: v.connectTimeoutMs,
    reconnectMs: v.reconnectMs,
    idleSpinUs: v.idleSpinUs,
    dmaLatencyUs: v.dmaLatencyUs,
    idleSleepUs: v.idleSleepUs,
    idleSleepMaxUs: v.idleSleepMaxUs,
    placement: v.placement,
    refractionMs: v.refractionMs,
    hostView: v.hostView ?? true,
    hostViewCapacity: v.hostViewCapacity,
    hostViewShards: v.hostViewShards,
    hostViewSpinUs: v.hostViewSpinUs,
    prefetch: prefetchOptions(v, l.fileLabel),
    metrics: v.metrics === undefined ? { host: '127.0.0.1', port: 0 } : v.metrics,
    logLevel: v.logLevel ?? 'info',
  });
}

/** Parses pd3-agent's command line (and the config file it names). Throws UsageError. */
export function parseAgentCommand(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Command<AgentOptions> {
  return parseCommand(AGENT_SETTINGS, argv, (l) => build(l, env));
}

/** Checks settings given in code exactly as a config file's, filling the same defaults. Throws
 *  UsageError naming the bad key. */
export function agentOptions(settings: AgentSettings, env: NodeJS.ProcessEnv = process.env): AgentOptions {
  return optionsFromObject(AGENT_SETTINGS, settings, (l) => build(l, env));
}

/** pd3-agent --help. */
export function agentHelp(): string {
  return renderHelp(AGENT_SETTINGS, {
    name: 'pd3-agent',
    summary:
      "Runs a PD3 agent's Transfer Engine: takes the host library's requests from a shared segment, sends them " +
      'in batches to the memory servers and returns their responses, keeping Host View and the Loading Zone right.',
    required: ['segment', 'servers'],
    ready: 'the segment, the servers and the metrics address',
  });
}
