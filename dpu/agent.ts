// agent.ts — Agent: a Transfer Engine in this process, over the native EngineHandle (its own
// thread), with its logs pumped into a Logger and its metrics served over HTTP.
import { agentFamilies } from '../cli/agent-metrics.js';
import type { AgentOptions } from '../cli/agent-config.js';
import { formatEndpoint, type Endpoint } from '../cli/endpoint.js';
import { forwardLogs, LogPump } from '../cli/log-pump.js';
import { Logger } from '../cli/logger.js';
import { MetricsServer } from '../cli/metrics-server.js';
import { MetricsRegistry } from '../cli/metrics.js';
import { callNative } from '../host/errors.js';
import { addon, type NativeEngine, type NativeEngineOptions, type NativeServerState } from '../host/native.js';

/** The native options of checked AgentOptions (absent tuning keys are left out, not undefined). */
function nativeOptions(o: AgentOptions): NativeEngineOptions {
  const out: NativeEngineOptions = {
    segment: o.segment,
    servers: o.servers.map(formatEndpoint),
    token: o.token,
    hostView: o.hostView,
  };
  if (o.maxBatchRecords !== undefined) out.maxBatchRecords = o.maxBatchRecords;
  if (o.maxBatchBytes !== undefined) out.maxBatchBytes = o.maxBatchBytes;
  if (o.batchDelayUs !== undefined) out.batchDelayUs = o.batchDelayUs;
  if (o.maxOutstanding !== undefined) out.maxOutstanding = o.maxOutstanding;
  if (o.responseBuffer !== undefined) out.responseBufferBytes = o.responseBuffer;
  if (o.requestTimeoutMs !== undefined) out.requestTimeoutMs = o.requestTimeoutMs;
  if (o.connectTimeoutMs !== undefined) out.connectTimeoutMs = o.connectTimeoutMs;
  if (o.reconnectMs !== undefined) out.reconnectMs = o.reconnectMs;
  if (o.idleSpinUs !== undefined) out.idleSpinUs = o.idleSpinUs;
  if (o.idleSleepUs !== undefined) out.idleSleepUs = o.idleSleepUs;
  if (o.hostViewCapacity !== undefined) out.hostViewCapacity = o.hostViewCapacity;
  if (o.hostViewShards !== undefined) out.hostViewShards = o.hostViewShards;
  return out;
}

/** A running agent (Transfer Engine) serving one host segment. */
export class Agent {
  readonly segment: string;
  readonly logger: Logger;
  private native: NativeEngine | null;
  private pump: LogPump | null = null;
  private metricsServer: MetricsServer | null = null;
  private closing: Promise<void> | null = null;
  private readonly registry = new MetricsRegistry();

  private constructor(native: NativeEngine, segment: string, logger: Logger) {
    this.native = native;
    this.segment = segment;
    this.logger = logger;
    this.registry.add(() => {
      const handle = this.handle();
      return agentFamilies(handle.stats(), handle.servers());
    });
  }

  /** Attaches the segment, connects to the servers (one that is down is retried in the
   *  background), starts the metrics endpoint (unless options.metrics is null) and logs "ready".
   *  Options come from agentOptions() or the CLI. Rejects with a Pd3Error when the engine cannot
   *  start (no such segment, bad segment, bad options). */
  static async start(options: AgentOptions, logger: Logger = new Logger('agent', options.logLevel)): Promise<Agent> {
    if (typeof addon.EngineHandle !== 'function') {
      throw new Error(
        'this build of the pd3 addon has no Transfer Engine (EngineHandle); rebuild it with `npm run build`',
      );
    }
    const native = callNative(() => new addon.EngineHandle(nativeOptions(options)));
    const agent = new Agent(native, options.segment, logger);
    if (options.metrics !== null) {
      try {
        agent.metricsServer = await MetricsServer.listen(options.metrics, () => agent.metrics(), logger);
      } catch (e) {
        await agent.close();
        throw e;
      }
    }
    const servers = options.servers.map(formatEndpoint);
    const metrics = agent.metricsAddress;
    logger.info('ready', `agent serving segment ${options.segment} with ${servers.length} memory server(s)`, {
      segment: options.segment,
      servers,
      serversUp: native.servers().filter((s) => s.connected).length,
      metrics: metrics === null ? null : formatEndpoint(metrics),
    });
    // Started after "ready" so that it stays the first line; earlier native events wait in the queue.
    agent.pump = new LogPump(native, logger);
    return agent;
  }

  /** Where /metrics is served, or null when it is off. */
  get metricsAddress(): Endpoint | null {
    return this.metricsServer?.address ?? null;
  }

  /** Engine counters and gauges (EngineStats fields, snake_case). */
  stats(): Record<string, number> {
    return this.handle().stats();
  }

  /** Each memory server as the engine sees it. */
  servers(): NativeServerState[] {
    return this.handle().servers();
  }

  /** The Prometheus text exposition of this agent's metrics now. */
  metrics(): string {
    return this.registry.expose();
  }

  /** Stops serving metrics, stops the engine (requests in flight are answered unavailable) and
   *  forwards its last log events. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    await this.metricsServer?.close();
    this.pump?.stop();
    const native = this.handle();
    native.close();
    // After close: the engine's last events (servers dropped, stopped) are queued too.
    forwardLogs(native, this.logger);
    this.native = null;
  }

  private handle(): NativeEngine {
    if (this.native === null) throw new Error('agent closed');
    return this.native;
  }
}
