// native-service.ts — what a running deployable (MemServer, Agent) is in this process: a native
// handle with its own threads, its log events pumped into a Logger, its metrics served over HTTP,
// and an idempotent close.
import type { Endpoint } from './endpoint.js';
import { forwardLogs, LogPump, type LogSource } from './log-pump.js';
import type { Logger } from './logger.js';
import { MetricsServer } from './metrics-server.js';
import { MetricsRegistry } from './metrics.js';

/** A native handle a service owns. */
export interface ServiceHandle extends LogSource {
  close(): void;
}

/** The shared lifecycle of MemServer and Agent. */
export abstract class NativeService<H extends ServiceHandle> {
  readonly logger: Logger;
  protected readonly registry = new MetricsRegistry();
  private native: H | null;
  private pump: LogPump | null = null;
  private metricsServer: MetricsServer | null = null;
  private closing: Promise<void> | null = null;

  protected constructor(
    native: H,
    logger: Logger,
    private readonly what: string,
  ) {
    this.native = native;
    this.logger = logger;
  }

  /** Where /metrics is served, or null when it is off. */
  get metricsAddress(): Endpoint | null {
    return this.metricsServer?.address ?? null;
  }

  /** The Prometheus text exposition of this service's metrics now. */
  metrics(): string {
    return this.registry.expose();
  }

  /** Stops serving metrics, stops the native side and forwards its last log events. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  /** Serves /metrics at `at` (null: off); on failure closes the service and rethrows. */
  protected async serveMetrics(at: Endpoint | null): Promise<void> {
    if (at === null) return;
    try {
      this.metricsServer = await MetricsServer.listen(at, () => this.metrics(), this.logger);
    } catch (e) {
      await this.close();
      throw e;
    }
  }

  /** Starts forwarding native log events: call right after logging "ready", so that it stays the
   *  first line (earlier native events wait in the queue). */
  protected startLogPump(): void {
    this.pump = new LogPump(this.handle(), this.logger);
  }

  protected handle(): H {
    if (this.native === null) throw new Error(`${this.what} closed`);
    return this.native;
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
}
