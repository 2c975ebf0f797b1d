// server.ts — MemServer: a memory server in this process, over the native MemServerHandle (its own
// event-loop thread), with its logs pumped into a Logger and its metrics served over HTTP.
import { formatEndpoint, type Endpoint } from '../cli/endpoint.js';
import { forwardLogs, LogPump } from '../cli/log-pump.js';
import { Logger } from '../cli/logger.js';
import type { MemServerOptions } from '../cli/memserver-config.js';
import { memServerFamilies } from '../cli/memserver-metrics.js';
import { MetricsServer } from '../cli/metrics-server.js';
import { MetricsRegistry } from '../cli/metrics.js';
import { callNative } from '../host/errors.js';
import { addon, type NativeMemServer, type NativeMemServerOptions } from '../host/native.js';

/** The native options of checked MemServerOptions (absent tuning keys are left out, not undefined). */
function nativeOptions(o: MemServerOptions): NativeMemServerOptions {
  const out: NativeMemServerOptions = {
    host: o.listen.host,
    port: o.listen.port,
    serverId: o.serverId,
    token: o.token,
    headroom: o.headroom,
    sync: o.sync,
  };
  if (o.capacity !== undefined) out.capacity = o.capacity;
  if (o.dataDir !== undefined) out.dataDir = o.dataDir;
  if (o.maxFrame !== undefined) out.maxFrame = o.maxFrame;
  if (o.maxConnections !== undefined) out.maxConnections = o.maxConnections;
  if (o.indexInitialKeys !== undefined) out.indexInitialKeys = o.indexInitialKeys;
  return out;
}

/** A running memory server. */
export class MemServer {
  /** The port it serves on (the real one when port 0 was asked for). */
  readonly port: number;
  /** The address it serves on. */
  readonly address: Endpoint;
  readonly logger: Logger;
  private native: NativeMemServer | null;
  private pump: LogPump | null = null;
  private metricsServer: MetricsServer | null = null;
  private closing: Promise<void> | null = null;
  private readonly registry = new MetricsRegistry();

  private constructor(native: NativeMemServer, host: string, logger: Logger) {
    this.native = native;
    this.port = native.port();
    this.address = { host, port: this.port };
    this.logger = logger;
    this.registry.add(() => {
      const handle = this.handle();
      return memServerFamilies(handle.stats(), handle.batchHistogram());
    });
  }

  /** Starts a memory server, its metrics endpoint (unless options.metrics is null), and logs
   *  "ready". Options come from memServerOptions() or the CLI. Rejects with a Pd3Error when the
   *  native server cannot start (port in use, bad data dir...). */
  static async start(
    options: MemServerOptions,
    logger: Logger = new Logger('memserver', options.logLevel),
  ): Promise<MemServer> {
    if (typeof addon.MemServerHandle !== 'function') {
      throw new Error(
        'this build of the pd3 addon has no memory server (MemServerHandle); rebuild it with `npm run build`',
      );
    }
    const native = callNative(() => new addon.MemServerHandle(nativeOptions(options)));
    const server = new MemServer(native, options.listen.host, logger);
    if (options.metrics !== null) {
      try {
        server.metricsServer = await MetricsServer.listen(options.metrics, () => server.metrics(), logger);
      } catch (e) {
        await server.close();
        throw e;
      }
    }
    const metrics = server.metricsAddress;
    logger.info('ready', `memory server id ${options.serverId} serving on ${formatEndpoint(server.address)}`, {
      listen: formatEndpoint(server.address),
      port: server.port,
      serverId: options.serverId,
      metrics: metrics === null ? null : formatEndpoint(metrics),
      dataDir: options.dataDir ?? null,
    });
    // Started after "ready" so that it stays the first line; earlier native events wait in the queue.
    server.pump = new LogPump(native, logger);
    return server;
  }

  /** Where /metrics is served, or null when it is off. */
  get metricsAddress(): Endpoint | null {
    return this.metricsServer?.address ?? null;
  }

  /** Native counters and gauges, by name. */
  stats(): Record<string, number> {
    return this.handle().stats();
  }

  /** Request frames by records per frame: counts for ≤1, ≤2, ≤4, … ≤4096, then more. */
  batchHistogram(): number[] {
    return this.handle().batchHistogram();
  }

  /** The Prometheus text exposition of this server's metrics now. */
  metrics(): string {
    return this.registry.expose();
  }

  /** Stops serving metrics, stops the native server (closing every connection) and forwards its
   *  last log events. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    await this.metricsServer?.close();
    this.pump?.stop();
    const native = this.handle();
    native.close();
    // After close: the native side's last events (connections closed, stopped) are queued too.
    forwardLogs(native, this.logger);
    this.native = null;
  }

  private handle(): NativeMemServer {
    if (this.native === null) throw new Error('memory server closed');
    return this.native;
  }
}
