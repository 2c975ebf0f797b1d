// server.ts — MemServer: a memory server in this process, over the native MemServerHandle (its own
// event-loop thread), with its logs pumped into a Logger and its metrics served over HTTP.
import { formatEndpoint, type Endpoint } from '../cli/endpoint.js';
import { Logger } from '../cli/logger.js';
import type { MemServerOptions } from './config.js';
import { memServerFamilies } from './metrics.js';
import type { MetricFamily } from '../cli/metrics.js';
import { NativeService } from '../cli/native-service.js';
import { callNative } from '../common/errors.js';
import { addon, constants, type NativeMemServer, type NativeMemServerOptions, type TenantUsage } from './native.js';
import { machineHarvestableBytes } from './meminfo.js';
import { PoolMember, type MemberCapacity } from './pool-member.js';
import { TenantReaper } from './tenant-reaper.js';
import { HeatMeter, type RegionAccesses } from './heat.js';
import { Migrator } from './migrator.js';
import { MoveJanitor } from './move-janitor.js';
import type { NativeTransportClient } from './native.js';
import { tenantCredential } from './credential-command.js';
import type { Etcd3 } from 'etcd3';
import { openEtcd } from '../common/etcd-client.js';

/** How often the regions' access counters are sampled into rates. */
const HEAT_SAMPLE_MS = 500;
/** How long each transport step of a region move (connect, one request) may take. */
const MIGRATE_STEP_TIMEOUT_MS = 3000;

/** The record parser as configured, for logs and metrics. */
function recordParserName(o: MemServerOptions): string {
  return o.recordParser ?? 'builtin';
}

/** The info family naming the record parser in use: `parser` as configured, `format` as the native
 *  side reads records ("builtin", or the plug-in's parser name). */
function recordParserFamily(parser: string, format: string): MetricFamily {
  return {
    type: 'gauge',
    name: 'pd3_memserver_record_parser_info',
    help: 'The record parser indexing writes (always 1): parser = as configured, format = how records are read.',
    samples: [{ labels: { parser, format }, value: 1 }],
  };
}

/** The native options of checked MemServerOptions (absent tuning keys are left out, not undefined). */
function nativeOptions(o: MemServerOptions): NativeMemServerOptions {
  const out: NativeMemServerOptions = {
    host: o.listen.host,
    port: o.listen.port,
    serverId: o.serverId,
    token: o.token,
    headroom: o.headroom,
    sync: o.sync,
    giveBack: o.giveBack ? 'on' : 'off',
  };
  if (o.meminfo !== undefined) out.meminfo = o.meminfo;
  if (o.pressureCheckMs !== undefined) out.pressureCheckMs = o.pressureCheckMs;
  if (o.capacity !== undefined) out.capacity = o.capacity;
  if (o.dataDir !== undefined) out.dataDir = o.dataDir;
  if (o.tier !== undefined) Object.assign(out, o.tier);
  if (o.maxFrame !== undefined) out.maxFrame = o.maxFrame;
  if (o.maxConnections !== undefined) out.maxConnections = o.maxConnections;
  if (o.warmAhead !== undefined) out.warmAhead = o.warmAhead;
  if (o.indexInitialKeys !== undefined) out.indexInitialKeys = o.indexInitialKeys;
  if (o.recordParser !== undefined) out.recordParser = o.recordParser;
  return out;
}

/** A running memory server. */
export class MemServer extends NativeService<NativeMemServer> {
  /** The port it serves on (the real one when port 0 was asked for). */
  readonly port: number;
  /** The address it serves on. */
  readonly address: Endpoint;
  /** The record parser as configured: "builtin", "resp", "binary", or a library. */
  readonly recordParser: string;
  /** How its index reads records: "builtin" (pd3/record.h), or the plug-in parser's name. */
  readonly recordFormat: string;
  /** Its membership of an etcd-run pool, or null without --etcd. */
  pool: PoolMember | null = null;
  /** Reclaims the regions of tenants whose leases are gone, or null without --etcd. */
  reaper: TenantReaper | null = null;
  /** The region migrator (it acts only while this server leads it), or null without --migrate on. */
  migrator: Migrator | null = null;
  /** Settles this server's moves abandoned by a dead migrator, or null without --etcd. */
  janitor: MoveJanitor | null = null;
  /** Per-region access rates and the server's load, measured with --etcd. */
  readonly heat = new HeatMeter();
  /** The one etcd client of the membership, the reaper and the migrator. */
  private etcd: Etcd3 | null = null;
  private heatTimer: NodeJS.Timeout | null = null;

  private constructor(native: NativeMemServer, host: string, recordParser: string, logger: Logger) {
    super(native, logger, 'memory server');
    this.port = native.port();
    this.address = { host, port: this.port };
    this.recordParser = recordParser;
    this.recordFormat = native.recordParser();
    const info = recordParserFamily(this.recordParser, this.recordFormat);
    this.registry.add(() => {
      const handle = this.handle();
      return [...memServerFamilies(handle.stats(), handle.batchHistogram()), info];
    });
  }

  /** Starts a memory server, its metrics endpoint (unless options.metrics is null), and logs
   *  "ready". Options come from memServerOptions() or the CLI. Rejects with a Pd3Error when the
   *  native server cannot start (port in use, bad data dir...). */
  static async start(
    options: MemServerOptions,
    logger: Logger = new Logger('memserver', options.logLevel),
  ): Promise<MemServer> {
    const native = callNative(() => new addon.MemServerHandle(nativeOptions(options)));
    const server = new MemServer(native, options.listen.host, recordParserName(options), logger);
    await server.serveMetrics(options.metrics);
    if (options.pool !== undefined) await server.joinPool(options);
    const metrics = server.metricsAddress;
    logger.info('ready', `memory server id ${options.serverId} serving on ${formatEndpoint(server.address)}`, {
      listen: formatEndpoint(server.address),
      port: server.port,
      serverId: options.serverId,
      metrics: metrics === null ? null : formatEndpoint(metrics),
      dataDir: options.dataDir ?? null,
      recordParser: server.recordParser,
      recordFormat: server.recordFormat,
      pool: server.pool === null ? null : { key: server.pool.recordKey, state: server.pool.state },
    });
    server.startLogPump();
    return server;
  }

  /** Leaves the pool (its record goes at once), then stops serving. */
  override async close(): Promise<void> {
    if (this.heatTimer !== null) clearInterval(this.heatTimer);
    await this.migrator?.close();
    await this.janitor?.close();
    await this.reaper?.close();
    await this.pool?.close();
    this.etcd?.close();
    await super.close();
  }

  /** Regions and bytes of every tenant holding a region here ('' is the default tenant). */
  tenants(): TenantUsage[] {
    return this.handle().tenants();
  }

  /** Every region's access count and move state (as of at most 100 ms ago). */
  regionHeat(): RegionAccesses[] {
    return this.handle().regionHeat();
  }

  /** Native counters and gauges, by name. */
  stats(): Record<string, number> {
    return this.handle().stats();
  }

  /** Request frames by records per frame: counts for ≤1, ≤2, ≤4, … ≤4096, then more. */
  batchHistogram(): number[] {
    return this.handle().batchHistogram();
  }

  // Registers in the pool; etcd out of reach is logged and retried, never fatal (the data path
  // does not need etcd).
  private async joinPool(options: MemServerOptions): Promise<void> {
    const pool = options.pool!;
    const address = formatEndpoint(pool.advertise ?? this.address);
    const capacity = (): MemberCapacity => {
      const stats = this.handle().stats();
      return {
        capacityBytes: stats.capacity ?? 0,
        freeBytes: stats.free_bytes ?? 0,
        harvestableBytes: machineHarvestableBytes(options.headroom) ?? 0,
        heat: { load: Math.round(this.heat.load() * 100) / 100, hot: this.heat.hot() },
      };
    };
    this.measureHeat();
    const etcd = openEtcd(pool.endpoints);
    this.etcd = etcd;
    this.pool = await PoolMember.join({ ...pool, serverId: options.serverId, address }, capacity, this.logger, etcd);
    const member = this.pool;
    this.registry.add(() => member.families());
    const serverId = options.serverId;
    const localBits = constants.REGION_LOCAL_BITS;
    const reaper = new TenantReaper(pool, pool.reclaimGraceS, {
      tenants: () => this.handle().tenants(),
      reclaimTenant: (tenant) => this.handle().reclaimTenant(tenant),
      ownsRegion: (region) => region >>> localBits === serverId,
    }, this.logger, etcd);
    this.reaper = reaper;
    reaper.start();
    this.registry.add(() => reaper.families());
    if (pool.migrate !== undefined) this.startMigrator(options, etcd);
    const self = `${this.address.host === '0.0.0.0' ? '127.0.0.1' : this.address.host}:${this.port}`;
    const janitor = new MoveJanitor(pool.prefix, {
      constants,
      regionHeat: () => this.handle().regionHeat(),
      connectSelf: (tenant) => this.connectAs(options.token, self, tenant, MIGRATE_STEP_TIMEOUT_MS),
    }, this.logger, etcd);
    this.janitor = janitor;
    janitor.start();
    this.registry.add(() => janitor.families());
  }

  // A migrator's or janitor's connection to a server as `tenant`, with the credential derived from
  // the cluster token (every server of the pool holds the same one).
  private async connectAs(token: string, address: string, tenant: string, timeoutMs: number): Promise<NativeTransportClient> {
    const client = new addon.TransportClient();
    const credential = token === '' ? '' : tenantCredential(token, tenant, constants.TENANT_CREDENTIAL_CONTEXT);
    await client.connect(address, credential, tenant, timeoutMs);
    return client;
  }

  // Samples the regions' access counters every HEAT_SAMPLE_MS into the heat meter, and serves the load.
  private measureHeat(): void {
    const sample = (): void => this.heat.sample(this.handle().regionHeat(), Date.now(), this.handle().stats().tier_misses);
    sample();
    this.heatTimer = setInterval(sample, HEAT_SAMPLE_MS);
    this.heatTimer.unref();
    this.registry.add(() => [{
      type: 'gauge',
      name: 'pd3_memserver_load',
      help: "This server's load as published in the pool: READs, WRITEs and PREFETCH hits per second over its regions, plus 10 per SSD-tier miss per second, decayed.",
      samples: [{ value: this.heat.load() }],
    }]);
  }

  // Stands for the migrator's leadership; it connects to servers as each region's tenant.
  private startMigrator(options: MemServerOptions, etcd: Etcd3): void {
    const pool = options.pool!;
    const migrate = pool.migrate!;
    const token = options.token;
    const migrator = new Migrator(
      { prefix: pool.prefix, serverId: options.serverId, leaseTtlS: pool.leaseTtlS, intervalMs: migrate.intervalMs, ratio: migrate.ratio, graceS: migrate.graceS, stepTimeoutMs: MIGRATE_STEP_TIMEOUT_MS },
      {
        constants,
        connect: (address, tenant, timeoutMs) => this.connectAs(token, address, tenant, timeoutMs),
      },
      this.logger,
      etcd,
    );
    this.migrator = migrator;
    migrator.start();
    this.registry.add(() => migrator.families());
  }
}
