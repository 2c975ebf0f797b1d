// agent.ts — Agent: a Transfer Engine in this process, over the native EngineHandle (its own
// thread), with its logs pumped into a Logger and its metrics served over HTTP; with --etcd, its
// memory servers follow the pool's membership (common/pool-watch.ts).
import { agentFamilies } from './agent-metrics.js';
import type { AgentOptions } from './agent-config.js';
import { formatEndpoint, type Endpoint } from '../cli/endpoint.js';
import { Logger } from '../cli/logger.js';
import { NativeService } from '../cli/native-service.js';
import { callNative, Pd3Error } from '../common/errors.js';
import { UsageError } from '../cli/usage-error.js';
import { addon, type NativeEngine, type NativeEngineOptions, type NativeServerState } from './native.js';
import type { Parser } from '../parsers/index.js';
import { resolvePrefetchParser } from './prefetch-parser.js';
import { PoolWatch } from '../common/pool-watch.js';
import { poolFamilies } from './pool-metrics.js';
import { parseEndpoint } from '../cli/endpoint.js';

/** The native options of checked AgentOptions (absent tuning keys are left out, not undefined). */
function nativeOptions(o: AgentOptions): NativeEngineOptions {
  const out: NativeEngineOptions = {
    segment: o.segment,
    servers: o.servers.map(formatEndpoint),
    token: o.token,
    hostView: o.hostView,
  };
  if (o.tenant !== undefined) out.tenant = o.tenant;
  if (o.maxBatchRecords !== undefined) out.maxBatchRecords = o.maxBatchRecords;
  if (o.maxBatchBytes !== undefined) out.maxBatchBytes = o.maxBatchBytes;
  if (o.batchDelayUs !== undefined) out.batchDelayUs = o.batchDelayUs;
  if (o.maxOutstanding !== undefined) out.maxOutstanding = o.maxOutstanding;
  if (o.responseBuffer !== undefined) out.responseBufferBytes = o.responseBuffer;
  if (o.requestTimeoutMs !== undefined) out.requestTimeoutMs = o.requestTimeoutMs;
  if (o.connectTimeoutMs !== undefined) out.connectTimeoutMs = o.connectTimeoutMs;
  if (o.reconnectMs !== undefined) out.reconnectMs = o.reconnectMs;
  if (o.idleSpinUs !== undefined) out.idleSpinUs = o.idleSpinUs;
  if (o.dmaLatencyUs !== undefined) out.dmaLatencyNs = Math.round(o.dmaLatencyUs * 1000);
  if (o.idleSleepUs !== undefined) out.idleSleepUs = o.idleSleepUs;
  if (o.idleSleepMaxUs !== undefined) out.idleSleepMaxUs = o.idleSleepMaxUs;
  if (o.placement !== undefined) out.placement = o.placement;
  if (o.refractionMs !== undefined) out.refractionMs = o.refractionMs;
  if (o.hostViewCapacity !== undefined) out.hostViewCapacity = o.hostViewCapacity;
  if (o.hostViewShards !== undefined) out.hostViewShards = o.hostViewShards;
  if (o.hostViewSpinUs !== undefined) out.hostViewSpinUs = o.hostViewSpinUs;
  if (o.prefetch !== undefined) {
    const p = o.prefetch;
    out.prefetch = {
      parser: p.parser,
      backend: p.mirror,
      app: formatEndpoint(p.app),
      interface: p.interface,
    };
    if (p.issuer !== undefined) out.prefetch.issuer = p.issuer;
    if (p.ring !== undefined) out.prefetch.ring = p.ring;
    if (p.spinUs !== undefined) out.prefetch.spinUs = p.spinUs;
    if (p.sliceUs !== undefined) out.prefetch.sliceUs = p.sliceUs;
    if (p.dpdk !== undefined) out.prefetch.dpdk = { ...p.dpdk };
    if (p.teeListen !== undefined) out.prefetch.listen = formatEndpoint(p.teeListen);
    if (p.maxInflight !== undefined) out.prefetch.maxInflight = p.maxInflight;
    if (p.maxItemBytes !== undefined) out.prefetch.maxItemBytes = p.maxItemBytes;
  }
  return out;
}

/** Runs a TS parser on this thread for the engine's captured flows: each wake-up from the capture
 *  thread parses what is queued, yielding to the event loop between slices of 256 events. */
function attachTsParser(native: NativeEngine, parser: Parser): void {
  const SLICE = 256;
  const pump = (): void => {
    if (native.pumpFlows(SLICE) === SLICE) setImmediate(pump);
  };
  callNative(() => native.attachParser(parser, pump));
}

/** A running agent (Transfer Engine) serving one host segment. */
export class Agent extends NativeService<NativeEngine> {
  readonly segment: string;
  private stopping: Promise<void> | null = null;

  private constructor(
    native: NativeEngine,
    segment: string,
    logger: Logger,
    private readonly pool: PoolWatch | null,
  ) {
    super(native, logger, 'agent');
    this.segment = segment;
    this.registry.add(() => {
      const handle = this.handle();
      return agentFamilies(handle.stats(), handle.servers());
    });
    if (pool !== null) this.registry.add(() => poolFamilies(pool.stats()));
  }

  /** Attaches the segment, connects to the servers (one that is down is retried in the
   *  background), starts the metrics endpoint (unless options.metrics is null) and logs "ready".
   *  With options.pool, the servers are those registered in etcd, followed from then on. Options
   *  come from agentOptions() or the CLI. Rejects with a Pd3Error when the engine cannot start (no
   *  such segment, bad segment, bad options), or an Error when the pool cannot be read or is empty. */
  static async start(given: AgentOptions, logger: Logger = new Logger('agent', given.logLevel)): Promise<Agent> {
    const pool = given.pool === undefined ? null : await PoolWatch.open(given.pool, logger);
    try {
      const agent = await Agent.startEngine(pool === null ? given : { ...given, servers: startServers(pool) }, logger, pool);
      pool?.follow(agent.handle());
      return agent;
    } catch (e) {
      await pool?.close();
      throw e;
    }
  }

  private static async startEngine(options: AgentOptions, logger: Logger, pool: PoolWatch | null): Promise<Agent> {
    const parser = options.prefetch === undefined
      ? null
      : await resolvePrefetchParser(options.prefetch.parser, options.prefetch.parserConfig);
    const engineOptions = nativeOptions(options);
    if (parser?.kind === 'ts' && engineOptions.prefetch !== undefined) {
      engineOptions.prefetch.parser = parser.parser.name;
      engineOptions.prefetch.external = true;
    }
    const native = startNative(engineOptions, options.prefetch?.mirror === 'dpdk');
    if (parser?.kind === 'ts') {
      try {
        attachTsParser(native, parser.parser);
      } catch (e) {
        native.close();
        throw e;
      }
    }
    const agent = new Agent(native, options.segment, logger, pool);
    await agent.serveMetrics(options.metrics);
    const servers = options.servers.map(formatEndpoint);
    const metrics = agent.metricsAddress;
    logger.info('ready', `agent serving segment ${options.segment} with ${servers.length} memory server(s)`, {
      segment: options.segment,
      servers,
      serversUp: native.servers().filter((s) => s.connected).length,
      prefetch: options.prefetch === undefined ? null : `${options.prefetch.parser} on ${options.prefetch.mirror}, issued by the ${options.prefetch.issuer ?? 'agent'}`,
      teePort: native.teePort() || null,
      metrics: metrics === null ? null : formatEndpoint(metrics),
    });
    agent.startLogPump();
    return agent;
  }

  /** Engine counters and gauges (EngineStats fields, snake_case). */
  stats(): Record<string, number> {
    return this.handle().stats();
  }

  /** Each memory server as the engine sees it. */
  servers(): NativeServerState[] {
    return this.handle().servers();
  }

  /** Stops following the pool (if it does), then the engine and the metrics endpoint. Idempotent. */
  override close(): Promise<void> {
    this.stopping ??= (async () => {
      await this.pool?.close();
      await super.close();
    })();
    return this.stopping;
  }
}

// The engine; with --mirror dpdk, a build without DPDK and a refusal by the EAL or the port are
// bad configuration (UsageError: exit 2), with the EAL's reason.
function startNative(engineOptions: NativeEngineOptions, dpdk: boolean): NativeEngine {
  if (dpdk && !addon.dpdkBuiltIn) throw new UsageError('pd3-agent was built without DPDK (install libdpdk-dev and rebuild)');
  try {
    return callNative(() => new addon.EngineHandle(engineOptions));
  } catch (e) {
    if (dpdk && e instanceof Pd3Error && e.code === 'PD3_E_INVAL' && e.message.includes('dpdk:')) throw new UsageError(e.message);
    throw e;
  }
}

// The memory servers registered in the pool at start. Those that leave, join or come back later
// are followed: PoolWatch hands each change to the engine (docs/pool.md).
function startServers(pool: PoolWatch): Endpoint[] {
  return pool.members.map((m) => parseEndpoint(m.address, { anyPort: false, ipv4Only: false }));
}
