// log-pump.ts — moves a native component's queued log events into a Logger every ~100 ms.
import { LOG_LEVELS, type Logger } from './logger.js';

/** One structured log event from a native component (native/common/log_queue.hpp). */
export interface NativeLogEvent {
  level: 'debug' | 'info' | 'warn' | 'error';
  event: string;
  message: string;
}

/** A native handle that queues log events (MemServerHandle, EngineHandle). */
export interface LogSource {
  takeLogs(): { events: NativeLogEvent[]; dropped: number };
}

/** Forwards the events queued now under their native event names, and reports events lost to a
 *  full queue. */
export function forwardLogs(source: LogSource, logger: Logger): void {
  const { events, dropped } = source.takeLogs();
  for (const e of events) {
    logger.log(LOG_LEVELS.includes(e.level) ? e.level : 'info', e.event, e.message);
  }
  if (dropped > 0) {
    logger.warn('log.dropped', `${dropped} native log events were lost to a full queue`, { dropped });
  }
}

/** Calls forwardLogs on a timer. */
export class LogPump {
  private timer: NodeJS.Timeout | null;

  constructor(
    private readonly source: LogSource,
    private readonly logger: Logger,
    intervalMs = 100,
  ) {
    // Referenced on purpose: a running server keeps its process alive until it is closed.
    this.timer = setInterval(() => forwardLogs(this.source, this.logger), intervalMs);
  }

  /** Stops the timer (idempotent); call forwardLogs once more to collect the last events. */
  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
