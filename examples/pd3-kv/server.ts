// server.ts — a running pd3-kv: the TCP listener, the store and its log, the mode's remote side,
// the executor, active expiry, INFO, and a clean close.
import { createServer, type AddressInfo, type Server } from 'node:net';
import { formatEndpoint } from 'pd3/cli';
import type { Logger } from 'pd3/cli';
import { formatSize } from 'pd3/cli';
import { packageVersion } from 'pd3/cli';
import { TenantSession } from 'pd3/host';
import { commandTable } from './command-table.js';
import type { Command } from './command.js';
import { REDIS_COMPAT_VERSION } from './commands-server.js';
import { usesAgent, type KvMode, type KvOptions } from './config.js';
import { Connection } from './connection.js';
import { Executor } from './executor.js';
import { HybridLog } from './hybrid-log.js';
import { renderInfo, type InfoFields } from './info.js';
import { KvStore } from './kv-store.js';
import { setUpRemote, type RemoteSide } from './remote-setup.js';
import type { RespLimits } from './resp-reader.js';
import type { ServerView } from './server-view.js';
import { KvStats } from './stats.js';

/** How often expired keys are sampled, and how many per round. */
const EXPIRE_EVERY_MS = 100;
const EXPIRE_SAMPLE = 200;

/** A pd3-kv server that is listening. */
export interface KvServer {
  /** The address it listens on (the port chosen when 0 was asked). */
  readonly host: string;
  readonly port: number;
  readonly mode: KvMode;
  /** The segment the agent attaches to (pd3 modes), else null. */
  readonly segment: string | null;
  readonly stats: KvStats;
  /** INFO text of the sections named (lower case; none: all). */
  info(sections?: readonly string[]): string;
  /** Stops listening, closes every connection and the remote side. */
  close(): Promise<void>;
}

/** Implements KvServer and what server commands see of it. */
class RunningKv implements KvServer, ServerView {
  readonly stats = new KvStats();
  readonly commands: ReadonlyMap<string, Command> = commandTable();
  readonly mode: KvMode;
  readonly segment: string | null;
  host = '';
  port = 0;
  private readonly log: HybridLog;
  private readonly store: KvStore;
  private readonly remote: RemoteSide | null;
  private readonly executor: Executor;
  private readonly connections = new Set<Connection>();
  private readonly listener: Server;
  private readonly limits: RespLimits;
  private readonly startedAt = Date.now();
  private readonly expireTimer: NodeJS.Timeout;

  constructor(
    private readonly options: KvOptions,
    private readonly logger: Logger,
    private readonly session: TenantSession | null,
  ) {
    this.mode = options.mode;
    this.segment = usesAgent(options.mode) ? options.segment! : null;
    this.log = new HybridLog(options.pageSize);
    this.remote = options.mode === 'local' ? null : setUpRemote(options, this.log, this.stats, logger, session);
    this.store = new KvStore(this.log, this.remote?.missPath ?? null, this.stats, options.indexInitialKeys, options.copyReadsToTail);
    this.executor = new Executor(this.store, this, this.commands, this.remote?.missPath ?? null, this.stats, logger);
    const maxBulkBytes = Math.max(2 ** 20, options.pageSize);
    this.limits = { maxBulkBytes, maxInlineBytes: 64 * 1024, maxArgs: 1024 * 1024, maxRequestBytes: Math.max(64 * 2 ** 20, 2 * maxBulkBytes) };
    this.listener = createServer((socket) => {
      this.stats.connectionsReceived++;
      const c = new Connection(socket, this.executor, this.limits, this.stats);
      this.connections.add(c);
      socket.on('close', () => this.connections.delete(c));
    });
    this.expireTimer = setInterval(() => {
      if (this.executor.idle) this.store.expireSample(EXPIRE_SAMPLE);
    }, EXPIRE_EVERY_MS);
    this.expireTimer.unref();
  }

  async listen(): Promise<void> {
    const { host, port } = this.options.listen;
    await new Promise<void>((resolve, reject) => {
      this.listener.once('error', reject);
      this.listener.listen(port, host, () => {
        this.listener.off('error', reject);
        resolve();
      });
    });
    this.host = host;
    this.port = (this.listener.address() as AddressInfo).port;
  }

  info(sections: readonly string[] = []): string {
    return renderInfo(this.infoSections(), sections);
  }

  configParams(): ReadonlyArray<readonly [string, string]> {
    const budget = this.options.budget;
    return [
      ['save', ''],
      ['appendonly', 'no'],
      ['databases', '1'],
      ['maxmemory', budget.kind === 'bytes' && this.mode !== 'local' ? String(budget.bytes) : '0'],
      ['maxmemory-policy', 'noeviction'],
      ['port', String(this.port)],
      ['bind', this.host],
      ['timeout', '0'],
      ['proto-max-bulk-len', String(this.limits.maxBulkBytes)],
    ];
  }

  flushAll(): void {
    this.store.flushAll();
  }

  async close(): Promise<void> {
    clearInterval(this.expireTimer);
    const closed = new Promise<void>((resolve) => this.listener.close(() => resolve()));
    for (const c of this.connections) c.destroy();
    this.connections.clear();
    await closed;
    this.remote?.flusher.close();
    // Before the host: the session lets a named region being opened through it get its record.
    await this.session?.close();
    this.remote?.host.close();
  }

  private infoSections(): Map<string, InfoFields> {
    const s = this.stats;
    const budget = this.options.budget;
    const uptime = Math.floor((Date.now() - this.startedAt) / 1000);
    const durablePages = this.remote?.flusher.durablePages ?? 0;
    const keys = this.store.size;
    const pd3: Array<readonly [string, string | number]> = [
      ['mode', this.mode],
      ['page_size', this.options.pageSize],
      ['memory_budget', this.mode === 'local' ? 'unlimited' : budget.kind === 'bytes' ? budget.bytes : `${budget.percent}%`],
      ['keep_pages', this.remote?.flusher.keepPages() ?? 'all'],
      ['log_tail_address', this.log.tailAddress],
      ['log_durable_address', durablePages * this.options.pageSize],
      ['resident_pages', this.log.residentPages],
      ['resident_bytes', this.log.residentPages * this.options.pageSize],
      ['flushed_pages', s.flushedPages],
      ['flush_writes', s.flushWrites],
      ['flush_failures', s.flushFailures],
      ['remote_regions', this.remote?.remote.regionCount ?? 0],
      ['remote_regions_found', this.remote?.remote.regionsFound ?? 0],
      ['index_keys', keys],
      ['index_slots', this.store.index.capacity],
      ['index_bytes', this.store.index.bytes],
      ['index_bytes_per_key', keys > 0 ? (this.store.index.bytes / keys).toFixed(1) : '0'],
      ['local_hits', s.localHits],
      ['zone_hits', s.zoneHits],
      ['zone_wait_us', this.remote?.zoneWait?.us ?? 0],
      ['leap_hits', s.leapHits],
      ['leap_prefetched_pages', s.leapPrefetches],
      ['remote_reads', s.remoteReads],
      ['remote_read_us', Math.round(s.remoteReadMicros)],
      ['remote_reads_overtaken', s.readsOvertaken],
      ['remote_read_failures', s.remoteReadFailures],
      ['index_collisions', s.indexCollisions],
      ['tombstones', s.tombstones],
    ];
    if (this.segment !== null) {
      pd3.push(['segment', this.segment], ['agent_alive', this.remote!.host.agentAlive() ? 1 : 0]);
    }
    const rss = process.memoryUsage().rss;
    return new Map<string, InfoFields>([
      ['server', [
        ['redis_version', REDIS_COMPAT_VERSION],
        ['pd3_kv_version', packageVersion()],
        ['redis_mode', 'standalone'],
        ['process_id', process.pid],
        ['tcp_port', this.port],
        ['uptime_in_seconds', uptime],
        ['uptime_in_days', Math.floor(uptime / 86400)],
      ]],
      ['clients', [['connected_clients', this.connections.size]]],
      ['memory', [
        ['used_memory', rss],
        ['used_memory_human', formatSize(rss - (rss % 1024))],
        ['maxmemory', this.mode !== 'local' && budget.kind === 'bytes' ? budget.bytes : 0],
      ]],
      ['persistence', [['loading', 0], ['aof_enabled', 0], ['rdb_changes_since_last_save', 0]]],
      ['stats', [
        ['total_connections_received', s.connectionsReceived],
        ['total_commands_processed', s.commands],
        ['total_net_input_bytes', s.netInputBytes],
        ['keyspace_hits', s.keyspaceHits],
        ['keyspace_misses', s.keyspaceMisses],
        ['expired_keys', s.expiredKeys],
      ]],
      ['keyspace', keys > 0 ? [['db0', `keys=${keys},expires=${this.store.expiry.size},avg_ttl=0`]] : []],
      ['pd3kv', pd3],
    ]);
  }
}

/** Starts a pd3-kv server with checked options and logs its "ready" line. */
export async function openKvServer(options: KvOptions, logger: Logger): Promise<KvServer> {
  const session =
    options.pool === undefined
      ? null
      : await TenantSession.open({
          endpoints: options.pool.endpoints,
          prefix: options.pool.prefix,
          tenant: options.pool.tenant,
          leaseTtlS: options.pool.leaseTtlS,
        });
  const kv = new RunningKv(options, logger, session);
  try {
    await kv.listen();
  } catch (e) {
    await kv.close();
    throw e;
  }
  const listen = formatEndpoint({ host: kv.host, port: kv.port });
  logger.info('ready', `pd3-kv (${kv.mode} mode) serving on ${listen}`, {
    listen,
    port: kv.port,
    mode: kv.mode,
    segment: kv.segment,
    pageSize: options.pageSize,
    memoryBudget: options.budget.kind === 'bytes' ? options.budget.bytes : `${options.budget.percent}%`,
  });
  return kv;
}
