// logger.ts — structured logs: one JSON object per line on stderr,
// {"ts","level","component","event","msg",...fields}, filtered by level.

/** Severity, lowest first. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Every level, lowest first. */
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** Extra fields of a log line. */
export type LogFields = Readonly<Record<string, unknown>>;

const RESERVED = new Set(['ts', 'level', 'component', 'event', 'msg']);

// JSON.stringify cannot encode bigint; errors encode as {} by default.
function replacer(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error) return value.message;
  return value;
}

/** Writes log lines for one component. */
export class Logger {
  readonly component: string;
  readonly level: LogLevel;
  private readonly rank: number;
  private readonly write: (line: string) => void;

  /** `write` gets each line with its newline; the default writes to stderr (synchronous for
   *  files and pipes on Linux, so lines written before an exit are not lost). */
  constructor(
    component: string,
    level: LogLevel = 'info',
    write: (line: string) => void = (line) => process.stderr.write(line),
  ) {
    this.component = component;
    this.level = level;
    this.rank = LOG_LEVELS.indexOf(level);
    this.write = write;
  }

  /** True if lines of `level` are written. */
  enabled(level: LogLevel): boolean {
    return LOG_LEVELS.indexOf(level) >= this.rank;
  }

  log(level: LogLevel, event: string, msg: string, fields: LogFields = {}): void {
    if (!this.enabled(level)) return;
    const line: Record<string, unknown> = {
      ts: new Date().toISOString(),
      level,
      component: this.component,
      event,
      msg,
    };
    for (const [k, v] of Object.entries(fields)) line[RESERVED.has(k) ? `field_${k}` : k] = v;
    this.write(`${JSON.stringify(line, replacer)}\n`);
  }

  debug(event: string, msg: string, fields?: LogFields): void {
    this.log('debug', event, msg, fields);
  }

  info(event: string, msg: string, fields?: LogFields): void {
    this.log('info', event, msg, fields);
  }

  warn(event: string, msg: string, fields?: LogFields): void {
    this.log('warn', event, msg, fields);
  }

  error(event: string, msg: string, fields?: LogFields): void {
    this.log('error', event, msg, fields);
  }
}
