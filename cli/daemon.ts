// daemon.ts — the life of a deployable's process: parse the command line (usage errors exit 2),
// start, stop on SIGINT/SIGTERM (exit 0), exit 1 on a failed start (2 when start found a setting
// bad) or an uncaught error.
import type { Command } from './config.js';
import { Logger, type LogLevel } from './logger.js';
import { EXIT_FAILURE, EXIT_USAGE, UsageError } from './usage-error.js';
import { packageVersion } from './version.js';

/** Something started that must be closed before the process exits. */
export interface Running {
  close(): Promise<void>;
}

/** One deployable as its process runner sees it. */
export interface Deployable<O extends { logLevel: LogLevel }> {
  /** Program name, e.g. "pd3-memserver". */
  name: string;
  /** The "component" of its log lines. */
  component: string;
  parse(argv: readonly string[], env: NodeJS.ProcessEnv): Command<O>;
  help(): string;
  /** Starts it; logs "ready" once it serves. */
  start(options: O, logger: Logger): Promise<Running>;
}

/** How long a stop may take before the process gives up on it. */
const STOP_DEADLINE_MS = 10_000;

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Runs a deployable: resolves once it is started (or exits the process: help, version, usage
 *  error, failed start); from then on a stop signal or an uncaught error ends the process. */
export async function runDeployable<O extends { logLevel: LogLevel }>(
  d: Deployable<O>,
  argv: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  let command: Command<O>;
  try {
    command = d.parse(argv, env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`${d.name}: ${e.message}\nRun '${d.name} --help' for the flags.\n`);
    process.exit(EXIT_USAGE);
  }
  if (command.kind === 'help') {
    process.stdout.write(d.help());
    process.exit(0);
  }
  if (command.kind === 'version') {
    process.stdout.write(`${d.name} ${packageVersion()}\n`);
    process.exit(0);
  }

  const logger = new Logger(d.component, command.options.logLevel);
  const fatal = (e: unknown): never => {
    logger.error('fatal', message(e), e instanceof Error && e.stack !== undefined ? { stack: e.stack } : {});
    process.exit(EXIT_FAILURE);
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);

  // A signal during start is honoured once start is done (there is nothing to close before).
  let pending: NodeJS.Signals | null = null;
  let running: Running | null = null;
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.error('stop.forced', `${signal} again while stopping: exiting without finishing the stop`);
      process.exit(EXIT_FAILURE);
    }
    if (running === null) {
      pending = signal;
      return;
    }
    stopping = true;
    logger.info('stopping', `${signal} received: stopping`, { signal });
    setTimeout(() => {
      logger.error('stop.timeout', `stop did not finish within ${STOP_DEADLINE_MS} ms: exiting`);
      process.exit(EXIT_FAILURE);
    }, STOP_DEADLINE_MS).unref();
    running.close().then(() => {
      logger.info('stopped', 'stopped');
      process.exit(0);
    }, fatal);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);

  try {
    running = await d.start(command.options, logger);
  } catch (e) {
    logger.error('start.failed', `cannot start: ${message(e)}`);
    // A setting found bad only at start (a DPDK port the EAL refuses) is a usage error too.
    process.exit(e instanceof UsageError ? EXIT_USAGE : EXIT_FAILURE);
  }
  const early = pending as NodeJS.Signals | null; // set by the handler while start ran
  if (early !== null) stop(early);
  // From here the running server's log pump and sockets keep the process alive until a signal.
}
