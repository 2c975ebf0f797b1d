// config.ts — pd3-kv's settings (flags and config keys), their checks and defaults, and the
// KvOptions they build. Same conventions as pd3-memserver and pd3-agent (docs/cli.md).
import { optionsFromObject, parseCommand, withoutUndefined, type Command, type SettingLayers } from 'pd3/cli';
import { formatEndpoint, type Endpoint } from 'pd3/cli';
import { renderHelp } from 'pd3/cli';
import { LOG_LEVELS, type LogLevel } from 'pd3/cli';
import { choice, describeJson, endpoint, endpointList, integer, integerOr, onOff, path, size, text, type Setting } from 'pd3/cli';
import { formatSize } from 'pd3/cli';
import { resolveToken, TOKEN_MAX_BYTES } from 'pd3/cli';
import { UsageError } from 'pd3/cli';
import { POOL_SETTINGS, poolOptions, tenantName, type PoolOptions } from 'pd3/cli';
import type { MemoryBudget } from './flusher.js';

/** Every mode, as --mode takes them. */
export const KV_MODES = ['local', 'sync', 'async', 'leap', 'pd3-noprefetch', 'pd3'] as const;
/** How pd3-kv reaches remote memory (README "Modes"). */
export type KvMode = (typeof KV_MODES)[number];

/** Modes that go through a PD3 agent (and create its segment). */
export function usesAgent(mode: KvMode): boolean {
  return mode === 'pd3' || mode === 'pd3-noprefetch';
}

/** A percentage in (0, 100]. */
function percent(t: { flag: string; help: string }): Setting<number> {
  const check = (v: number, shown: string): number => {
    if (!(v > 0 && v <= 100)) throw new Error(`must be a percentage above 0 and at most 100, got ${shown}`);
    return v;
  };
  return {
    ...t,
    arg: 'PERCENT',
    fromText(s) {
      if (!/^\d*\.?\d+$/.test(s.trim())) throw new Error(`must be a number such as 10 or 2.5, got "${s}"`);
      return check(Number(s), s.trim());
    },
    fromJson(value) {
      if (typeof value !== 'number') throw new Error(`must be a number such as 10 or 2.5, got ${describeJson(value)}`);
      return check(value, String(value));
    },
  };
}

/** Every setting of pd3-kv, by config key. */
export const KV_SETTINGS = {
  listen: endpoint(
    { anyPort: true, ipv4Only: false },
    { flag: 'listen', help: 'address and port clients connect to; port 0 picks a free one (the ready log line says which)', fallback: '127.0.0.1:6379' },
  ),
  mode: choice(KV_MODES, {
    flag: 'mode',
    help:
      'local: everything in local memory (never flushes); sync: a miss waits on one direct remote read; ' +
      'async: a batch\'s misses are read together (Redy-style); leap: sync plus a Leap page prefetcher; ' +
      'pd3-noprefetch: remote reads through the PD3 agent; pd3: checkAndReturn first, then through the agent',
    fallback: 'local',
  }),
  memoryBudget: size(4096, 2 ** 50, {
    flag: 'memory-budget',
    help: 'bytes of log pages kept in local memory; older pages are flushed to remote memory and dropped (ignored in local mode)',
    fallback: '1G',
  }),
  cachePercent: percent({
    flag: 'cache-percent',
    help: 'instead of --memory-budget: keep this percentage of the log (its size so far) in local memory',
  }),
  pageSize: size(4096, 64 * 2 ** 20, {
    flag: 'page-size',
    help: 'log page size, a power of two; a record (8-byte header, key, value) must fit one page',
    fallback: '64K',
  }),
  regionSize: size(65536, 2 ** 31, {
    flag: 'region-size',
    help: 'bytes of each remote region (a multiple of the page size); regions are allocated as the log grows',
    fallback: '64M',
  }),
  segment: text(200, {
    flag: 'segment',
    arg: 'NAME',
    help: 'pd3 modes: name of the shared segment to create (/dev/shm/NAME) for pd3-agent --segment',
  }),
  memservers: endpointList(
    { anyPort: false, ipv4Only: false },
    { flag: 'memservers', help: 'memory servers to reach directly: sync, async and leap modes (pd3 modes reach them through the agent)' },
  ),
  token: text(TOKEN_MAX_BYTES, {
    flag: 'token',
    help: "the memory servers' auth token for direct access (visible in ps: prefer --token-file or PD3_TOKEN)",
  }),
  tokenFile: path({ flag: 'token-file', arg: 'FILE', help: 'read the auth token from FILE (a trailing line break is ignored)' }),
  ...POOL_SETTINGS,
  etcd: {
    ...POOL_SETTINGS.etcd,
    help: "the pool's etcd: with --tenant and --log-name, the log's regions are named regions kept under this process's lease, found again by a restarted pd3-kv of the same name",
  },
  tenant: tenantName({
    flag: 'tenant',
    help: 'with --etcd: the tenant this pd3-kv is (direct modes connect as it, so the token is its credential; pd3 modes: give the agent the same --tenant)',
  }),
  logName: text(180, { flag: 'log-name', arg: 'NAME', help: "with --etcd: the name of this pd3-kv's remote log (its regions are NAME.0, NAME.1, ...)" }),
  leapCache: size(4096, 2 ** 40, {
    flag: 'leap-cache',
    help: 'leap mode: bytes of the page cache the Leap prefetcher fills; they come out of --memory-budget',
    fallback: 'a quarter of --memory-budget (16M with --cache-percent)',
  }),
  readCopy: onOff({
    flag: 'read-copy',
    help: 'append a value read from a flushed page again at the log tail, so the key is local again (FASTER CopyReadsToTail)',
    fallback: 'on',
  }),
  loadingZone: size(65536, 2 ** 30, {
    flag: 'loading-zone',
    help: 'pd3 modes: Loading Zone bytes in the segment (a power of two)',
    fallback: '16M',
  }),
  zoneWaitUs: integerOr('auto', 0, 1_000_000, {
    flag: 'zone-wait-us',
    help: "pd3 mode: how long a batch's Loading Zone misses wait for the agent's prefetches before they are read (and the read and the zone race on); auto: twice the recent time for items to land, 100-5000 µs",
    fallback: 'auto',
  }),
  indexInitialKeys: integer(16, 2 ** 29, {
    flag: 'index-initial-keys',
    help: 'keys the index holds before its first doubling',
    fallback: '262144',
  }),
  logLevel: choice(LOG_LEVELS, { flag: 'log-level', help: 'lowest level of log lines written to stderr', fallback: 'info' }),
};

/** pd3-kv's settings shaped like its config file, for code (startKv): sizes as bytes or "64M". */
export interface KvSettings {
  listen?: string;
  mode?: KvMode;
  memoryBudget?: number | string;
  cachePercent?: number;
  pageSize?: number | string;
  regionSize?: number | string;
  segment?: string;
  memservers?: string | string[];
  token?: string;
  tokenFile?: string;
  etcd?: string | string[];
  etcdPrefix?: string;
  leaseTtl?: number;
  tenant?: string;
  logName?: string;
  leapCache?: number | string;
  readCopy?: boolean;
  loadingZone?: number | string;
  zoneWaitUs?: number | 'auto';
  indexInitialKeys?: number;
  logLevel?: LogLevel;
}

/** Checked settings: what startKv runs. */
export interface KvOptions {
  listen: Endpoint;
  mode: KvMode;
  /** Local memory for log pages (leap mode: what its page cache leaves). */
  budget: MemoryBudget;
  pageSize: number;
  regionSize: number;
  /** pd3 modes only. */
  segment?: string;
  /** "host:port" of each memory server to reach directly: sync, async and leap modes. */
  memservers: string[];
  /** Present when memservers are. */
  token?: string;
  /** A named remote log in an etcd-run pool; absent: regions allocated anew at every start. */
  pool?: KvPoolOptions;
  leapCacheBytes: number;
  copyReadsToTail: boolean;
  loadingZoneBytes?: number;
  /** pd3 mode: µs a batch's zone misses wait for prefetches before they are read, or 'auto'
   *  (pd3/host's AdaptiveZoneWait). */
  zoneWaitUs: number | 'auto';
  indexInitialKeys: number;
  logLevel: LogLevel;
}

/** Where pd3-kv keeps its named log. */
export interface KvPoolOptions extends PoolOptions {
  tenant: string;
  logName: string;
}

const isPow2 = (n: number): boolean => n > 0 && (n & (n - 1)) === 0;

// The named-log options: all of --etcd, --tenant and --log-name, or none. Throws UsageError.
function buildPool(v: SettingLayers<typeof KV_SETTINGS>['merged'], mode: KvMode): KvPoolOptions | undefined {
  const pool: PoolOptions | null = poolOptions(v);
  if (pool === null) {
    const stray = v.tenant !== undefined ? KV_SETTINGS.tenant.flag : v.logName !== undefined ? KV_SETTINGS.logName.flag : null;
    if (stray !== null) throw new UsageError(`--${stray} needs --etcd`);
    return undefined;
  }
  if (mode === 'local') throw new UsageError('--etcd: local mode keeps no remote log');
  if (v.tenant === undefined || v.logName === undefined) throw new UsageError('--etcd needs --tenant and --log-name (whose log, and its name)');
  if (!/^[A-Za-z0-9._-]+$/.test(v.logName)) throw new UsageError(`--log-name: may hold only letters, digits, ".", "_" and "-", got "${v.logName}"`);
  return { ...pool, tenant: v.tenant, logName: v.logName };
}

function build(l: SettingLayers<typeof KV_SETTINGS>, env: NodeJS.ProcessEnv): KvOptions {
  const v = l.merged;
  const mode = v.mode ?? 'local';
  const pageSize = v.pageSize ?? 64 * 1024;
  const regionSize = v.regionSize ?? 64 * 2 ** 20;
  if (!isPow2(pageSize)) throw new UsageError(`--page-size: must be a power of two, got ${pageSize}`);
  if (regionSize % pageSize !== 0) {
    throw new UsageError(`--region-size: must be a multiple of the page size (${formatSize(pageSize)}), got ${regionSize}`);
  }
  if (v.loadingZone !== undefined && !isPow2(v.loadingZone)) {
    throw new UsageError(`--loading-zone: must be a power of two, got ${v.loadingZone}`);
  }
  if (v.zoneWaitUs !== undefined && mode !== 'pd3') throw new UsageError(`--zone-wait-us: only pd3 mode waits for the Loading Zone, not ${mode}`);
  if (v.memoryBudget !== undefined && v.cachePercent !== undefined) {
    throw new UsageError('give either --memory-budget or --cache-percent, not both');
  }
  const memservers = (v.memservers ?? []).map(formatEndpoint);
  if (mode === 'local' && memservers.length > 0) throw new UsageError('--memservers: local mode uses no remote memory');
  // No direct fallback in pd3 modes: a flush that bypassed the agent would leave Loading Zone items
  // it should have withdrawn (README "While the agent is down").
  if (usesAgent(mode) && memservers.length > 0) {
    throw new UsageError(`--memservers: ${mode} mode reaches the memory servers through the agent (give them to pd3-agent --servers)`);
  }
  if ((mode === 'sync' || mode === 'async' || mode === 'leap') && memservers.length === 0) {
    throw new UsageError(`--memservers: required in ${mode} mode (the memory servers to read from)`);
  }
  if (usesAgent(mode) && v.segment === undefined) throw new UsageError(`--segment: required in ${mode} mode (the agent attaches to it)`);
  if (!usesAgent(mode) && v.segment !== undefined) throw new UsageError(`--segment: only the pd3 modes use an agent's segment, not ${mode}`);
  if (v.segment !== undefined && !/^[A-Za-z0-9._-]+$/.test(v.segment)) {
    throw new UsageError(`--segment: may hold only letters, digits, ".", "_" and "-", got "${v.segment}"`);
  }
  let budget: MemoryBudget =
    v.cachePercent !== undefined ? { kind: 'percent', percent: v.cachePercent } : { kind: 'bytes', bytes: v.memoryBudget ?? 2 ** 30 };
  // Leap's page cache is local memory too: it comes out of the budget, so modes compare fairly.
  const leapCacheBytes = v.leapCache ?? (budget.kind === 'bytes' ? Math.max(pageSize, Math.floor(budget.bytes / 4)) : 16 * 2 ** 20);
  if (mode === 'leap' && budget.kind === 'bytes') budget = { kind: 'bytes', bytes: Math.max(pageSize, budget.bytes - leapCacheBytes) };
  return withoutUndefined({
    listen: v.listen ?? { host: '127.0.0.1', port: 6379 },
    mode,
    budget,
    pageSize,
    regionSize,
    segment: v.segment,
    memservers,
    token: memservers.length > 0 ? resolveToken(l.flags, l.file, l.fileLabel, env.PD3_TOKEN) : undefined,
    pool: buildPool(v, mode),
    leapCacheBytes,
    copyReadsToTail: v.readCopy ?? true,
    loadingZoneBytes: v.loadingZone,
    zoneWaitUs: v.zoneWaitUs ?? 'auto',
    indexInitialKeys: v.indexInitialKeys ?? 262144,
    logLevel: v.logLevel ?? 'info',
  });
}

/** Parses pd3-kv's command line (and the config file it names). Throws UsageError. */
export function parseKvCommand(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Command<KvOptions> {
  return parseCommand(KV_SETTINGS, argv, (l) => build(l, env));
}

/** Checks settings given in code exactly as a config file's. Throws UsageError naming the key. */
export function kvOptions(settings: KvSettings, env: NodeJS.ProcessEnv = process.env): KvOptions {
  return optionsFromObject(KV_SETTINGS, settings, (l) => build(l, env));
}

/** pd3-kv --help. */
export function kvHelp(): string {
  // The shared renderer calls the token required; pd3-kv needs one only to reach memory servers.
  const text = renderHelp(KV_SETTINGS, {
    name: 'pd3-kv',
    summary:
      'A RESP (Redis protocol) key-value store on a hybrid log that spills to remote memory: the Garnet stand-in ' +
      'of the PD3 evaluation. Strings, counters, expiry, MULTI/EXEC and pipelines; the --mode flag picks how misses ' +
      'reach remote memory. The token for direct memory-server access comes from --token-file, --token or PD3_TOKEN.',
    required: [],
    ready: 'the listening address and port, the mode and the segment',
  });
  return text.replace('Auth token (required):', 'Auth token (with --memservers):');
}
