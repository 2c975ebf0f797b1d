// config.ts — pd3-memserver's settings (flags and config keys), their checks and
// defaults, and the MemServerOptions they build.
import { recordParserSetting } from './record-parser-setting.js';
import { TIER_SETTINGS, tierOptions, type EvictName, type TierIoName, type TierOptions, type TierPrefetchName } from './tier-settings.js';
import { optionsFromObject, parseCommand, withoutUndefined, type Command, type SettingLayers } from '../cli/config.js';
import type { Endpoint } from '../cli/endpoint.js';
import { renderHelp } from '../cli/help.js';
import { LOG_LEVELS, type LogLevel } from '../cli/logger.js';
import { poolOptions, POOL_SETTINGS, type PoolOptions } from '../cli/pool-settings.js';
import { MAX_SERVER_ID } from '../common/constants.js';
import { choice, decimal, endpoint, endpointOrOff, fraction, integer, onOff, path, size, text } from '../cli/settings.js';
import { resolveToken, TOKEN_MAX_BYTES } from '../cli/token.js';
import { UsageError } from '../cli/usage-error.js';

/** The largest --warm-ahead, native/memserver/tcp_server.hpp's kMaxWarmAhead. Settings are checked
 *  before any addon is loaded (--help must work without one), so the number is mirrored here;
 *  test/memserver-warm.test.ts checks it against the addon's maxWarmAhead. */
export const MAX_WARM_AHEAD = 256;

/** Every setting of pd3-memserver, by config key. */
export const MEMSERVER_SETTINGS = {
  listen: endpoint(
    { anyPort: true, ipv4Only: true },
    {
      flag: 'listen',
      help: 'IPv4 address and port to serve the transport on; port 0 picks a free one (the ready log line says which)',
      fallback: '127.0.0.1:7400',
    },
  ),
  serverId: integer(0, MAX_SERVER_ID, {
    flag: 'server-id',
    help: "this server's id, the top 16 bits of every region id it hands out; unique among the servers of one agent",
    fallback: '0',
  }),
  token: text(TOKEN_MAX_BYTES, {
    flag: 'token',
    help: 'auth token every client must present (visible to other users in ps: prefer --token-file or PD3_TOKEN)',
  }),
  tokenFile: path({
    flag: 'token-file',
    arg: 'FILE',
    help: 'read the auth token from FILE (a trailing line break is ignored)',
  }),
  capacity: size(4096, 2 ** 50, {
    flag: 'capacity',
    help: 'bytes offered to regions in total, e.g. 512M or 4G',
    fallback: 'available memory minus the headroom',
  }),
  headroom: fraction(0, 1, {
    flag: 'headroom',
    help: "the machine's share kept free: without --capacity, of available memory at start; with --give-back, of MemTotal while running",
    fallback: '0.15',
  }),
  giveBack: onOff({
    flag: 'give-back',
    help:
      "with --data-dir: while MemAvailable is under the headroom's share of MemTotal, write the coldest " +
      "regions to their files and drop them from memory (they are then served from the files)",
    fallback: 'on',
  }),
  meminfo: path({
    flag: 'meminfo',
    arg: 'FILE',
    help: 'where MemTotal and MemAvailable are read for --give-back (a container may provide its own)',
    fallback: '/proc/meminfo',
  }),
  pressureCheckMs: integer(0, 3_600_000, {
    flag: 'pressure-check-ms',
    arg: 'MS',
    help: 'how often memory pressure is checked for --give-back (0: never)',
    fallback: '1000',
  }),
  dataDir: path({
    flag: 'data-dir',
    arg: 'DIR',
    help:
      'keep each region in a file in DIR, with the key index, and load them back at start (restart without loss); ' +
      'without it regions live in anonymous memory',
  }),
  sync: choice(['none', 'batch'], {
    flag: 'sync',
    help:
      'with --data-dir: batch = make the writes of each frame durable (msync, or with --dram-budget pwrite + ' +
      'fdatasync) before answering it; none = page cache only (survives a crash of the server, not of the ' +
      "machine; with --dram-budget, each frame's written bytes are pwritten to their files before answering it)",
    fallback: 'batch',
  }),
  ...TIER_SETTINGS,
  maxFrame: size(4096, 2 ** 30, { flag: 'max-frame', help: 'largest transport frame accepted', fallback: '16M' }),
  maxConnections: integer(1, 65536, {
    flag: 'max-connections',
    help: 'most client connections at once',
    fallback: '64',
  }),
  warmAhead: integer(0, MAX_WARM_AHEAD, {
    flag: 'warm-ahead',
    arg: 'N',
    help:
      "records of a frame whose bytes are hinted into the CPU's cache ahead of the one running, so that " +
      'small reads and writes at random offsets wait for memory together, not in turn (0: none)',
    fallback: '8',
  }),
  indexInitialKeys: integer(1, 2 ** 32, {
    flag: 'index-initial-keys',
    help: 'initial capacity of the key→address index (it grows by doubling)',
    fallback: '1048576',
  }),
  recordParser: recordParserSetting({
    flag: 'record-parser',
    help:
      'parser whose parse_record finds the keys of written records for the key→address index: builtin ' +
      '(pd3/record.h records), resp or binary (the same format), or the path of a native parser library; ' +
      'JS/TS parser modules are refused (the index runs on the native network thread)',
    fallback: 'builtin',
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
  ...POOL_SETTINGS,
  advertise: endpoint(
    { anyPort: false, ipv4Only: false },
    {
      flag: 'advertise',
      help: 'with --etcd: the address clients dial, published in the pool (needed when --listen is 0.0.0.0)',
      fallback: 'the --listen address',
    },
  ),
  reclaimGrace: integer(0, 86400, {
    flag: 'reclaim-grace',
    arg: 'S',
    help:
      "with --etcd: seconds a tenant's regions outlive the last lease of its clients before they are " +
      'freed (a client restarting within it keeps its data)',
    fallback: '30',
  }),
  migrate: onOff({
    flag: 'migrate',
    help:
      'with --etcd: stand for leader of the pool\'s region migrator, which moves hot named regions from the ' +
      'most loaded server to the least loaded one',
    fallback: 'off',
  }),
  migrateInterval: integer(100, 3_600_000, {
    flag: 'migrate-interval',
    arg: 'MS',
    help: 'with --migrate on: how often the leader compares the servers\' loads (at most one move each time)',
    fallback: '10000',
  }),
  migrateRatio: decimal(1, 1000, {
    flag: 'migrate-ratio',
    help: 'with --migrate on: move when the most loaded server\'s load is more than N times the least loaded one\'s',
    fallback: '2',
  }),
  migrateGrace: integer(0, 86400, {
    flag: 'migrate-grace',
    arg: 'S',
    help: 'with --migrate on: seconds a moved region\'s old copy answers PD3_E_MOVED before it is freed',
    fallback: '30',
  }),
};

/** pd3-memserver's settings shaped like its config file (sizes as bytes or strings like "4G"). */
export interface MemServerSettings {
  listen?: string;
  serverId?: number;
  token?: string;
  tokenFile?: string;
  capacity?: number | string;
  headroom?: number;
  giveBack?: boolean;
  meminfo?: string;
  pressureCheckMs?: number;
  dataDir?: string;
  sync?: 'none' | 'batch';
  dramBudget?: number | string;
  pageSize?: number | string;
  evict?: EvictName;
  tierPrefetch?: TierPrefetchName;
  tierIo?: TierIoName;
  mrCache?: number | string;
  maxFrame?: number | string;
  maxConnections?: number;
  warmAhead?: number;
  indexInitialKeys?: number;
  recordParser?: string;
  metrics?: string;
  logLevel?: LogLevel;
  etcd?: string | string[];
  etcdPrefix?: string;
  leaseTtl?: number;
  advertise?: string;
  reclaimGrace?: number;
  migrate?: boolean;
  migrateInterval?: number;
  migrateRatio?: number;
  migrateGrace?: number;
}

/** Checked settings of a memory server: what MemServer.start runs. */
export interface MemServerOptions {
  listen: Endpoint;
  serverId: number;
  token: string;
  /** Absent: what the machine can spare minus the headroom. */
  capacity?: number;
  headroom: number;
  /** With a dataDir: give cold regions' memory back under memory pressure. */
  giveBack: boolean;
  /** Absent: /proc/meminfo. */
  meminfo?: string;
  /** Absent: every 1000 ms. */
  pressureCheckMs?: number;
  /** Absent: regions in anonymous memory. */
  dataDir?: string;
  sync: 'none' | 'batch';
  /** The SSD tier (docs/tier.md); absent: regions are mapped files (or anonymous memory). */
  tier?: TierOptions;
  /** Absent: the native default, 16 MiB. */
  maxFrame?: number;
  /** Absent: the native default, 64. */
  maxConnections?: number;
  /** Absent: the native default, 8. */
  warmAhead?: number;
  /** Absent: the native default, 2^20. */
  indexInitialKeys?: number;
  /** Whose parse_record indexes writes: "builtin", "resp", "binary" (all the built-in record format),
   *  or a parser library's path or name; absent: "builtin". */
  recordParser?: string;
  /** null: no metrics endpoint. */
  metrics: Endpoint | null;
  logLevel: LogLevel;
  /** Absent: not in an etcd-run pool. */
  pool?: MemServerPoolOptions;
}

/** How a memory server joins an etcd-run pool. */
export interface MemServerPoolOptions extends PoolOptions {
  /** The address published for clients; absent: the listen address (with the real port). */
  advertise?: Endpoint;
  /** Seconds a tenant without a lease keeps its regions before they are reclaimed. */
  reclaimGraceS: number;
  /** Absent: this server does not stand for the migrator's leadership (--migrate off). */
  migrate?: { intervalMs: number; ratio: number; graceS: number };
}

function build(l: SettingLayers<typeof MEMSERVER_SETTINGS>, env: NodeJS.ProcessEnv): MemServerOptions {
  const v = l.merged;
  const listen = v.listen ?? { host: '127.0.0.1', port: 7400 };
  return withoutUndefined({
    listen,
    serverId: v.serverId ?? 0,
    token: resolveToken(l.flags, l.file, l.fileLabel, env.PD3_TOKEN),
    capacity: v.capacity,
    headroom: v.headroom ?? 0.15,
    giveBack: v.giveBack ?? true,
    meminfo: v.meminfo,
    pressureCheckMs: v.pressureCheckMs,
    dataDir: v.dataDir,
    sync: v.sync ?? 'batch',
    tier: tierOptions(v, v.dataDir),
    maxFrame: v.maxFrame,
    maxConnections: v.maxConnections,
    warmAhead: v.warmAhead,
    indexInitialKeys: v.indexInitialKeys,
    recordParser: v.recordParser,
    metrics: v.metrics === undefined ? { host: '127.0.0.1', port: 0 } : v.metrics,
    logLevel: v.logLevel ?? 'info',
    pool: buildPool(v, listen),
  });
}

// The pool options, checked against the listen address. Throws UsageError.
function buildPool(v: SettingLayers<typeof MEMSERVER_SETTINGS>['merged'], listen: Endpoint): MemServerPoolOptions | undefined {
  const pool: PoolOptions | null = poolOptions(v);
  if (pool === null) {
    if (v.advertise !== undefined) throw new UsageError('--advertise needs --etcd');
    if (v.reclaimGrace !== undefined) throw new UsageError('--reclaim-grace needs --etcd');
    if (v.migrate !== undefined) throw new UsageError('--migrate needs --etcd');
    checkMigrateFlags(v);
    return undefined;
  }
  if (v.advertise === undefined && listen.host === '0.0.0.0') {
    throw new UsageError('--etcd with --listen 0.0.0.0: give --advertise HOST:PORT, the address clients should dial');
  }
  const withGrace = { ...pool, reclaimGraceS: v.reclaimGrace ?? 30, ...migrateOptions(v) };
  return v.advertise === undefined ? withGrace : { ...withGrace, advertise: v.advertise };
}

// The migrator's options: none unless --migrate on. Throws UsageError.
function migrateOptions(v: SettingLayers<typeof MEMSERVER_SETTINGS>['merged']): Pick<MemServerPoolOptions, 'migrate'> {
  if (v.migrate !== true) {
    checkMigrateFlags(v);
    return {};
  }
  return { migrate: { intervalMs: v.migrateInterval ?? 10_000, ratio: v.migrateRatio ?? 2, graceS: v.migrateGrace ?? 30 } };
}

// A migrator tuning flag without --migrate on would be silently ignored: refused instead.
function checkMigrateFlags(v: SettingLayers<typeof MEMSERVER_SETTINGS>['merged']): void {
  const stray = v.migrateInterval !== undefined ? 'migrate-interval' : v.migrateRatio !== undefined ? 'migrate-ratio' : v.migrateGrace !== undefined ? 'migrate-grace' : null;
  if (stray !== null) throw new UsageError(`--${stray} needs --migrate on`);
}

/** Parses pd3-memserver's command line (and the config file it names). Throws UsageError. */
export function parseMemServerCommand(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Command<MemServerOptions> {
  return parseCommand(MEMSERVER_SETTINGS, argv, (l) => build(l, env));
}

/** Checks settings given in code exactly as a config file's, filling the same defaults. Throws
 *  UsageError naming the bad key. */
export function memServerOptions(settings: MemServerSettings, env: NodeJS.ProcessEnv = process.env): MemServerOptions {
  return optionsFromObject(MEMSERVER_SETTINGS, settings, (l) => build(l, env));
}

/** pd3-memserver --help. */
export function memServerHelp(): string {
  return renderHelp(MEMSERVER_SETTINGS, {
    name: 'pd3-memserver',
    summary:
      'Runs a PD3 memory server: regions of remote memory, a key→address index and the batch executor, ' +
      'served over TCP to PD3 agents (pd3-agent).',
    required: [],
    ready: 'the listening address and the metrics address',
  });
}
