// index.ts — pd3-kv's programmatic entry: startKv runs the server in this process (tests,
// benchmarks); cli.ts runs it as a deployable.
import { Logger } from 'pd3/cli';
import { kvOptions, type KvSettings } from './config.js';
import { openKvServer, type KvServer } from './server.js';

export { KV_MODES, kvOptions, parseKvCommand, type KvMode, type KvOptions, type KvSettings } from './config.js';
export type { KvServer } from './server.js';
export { KvStats } from './stats.js';
export { KeyIndex } from './key-index.js';
export { hashKey, type KeyHash } from './key-hash.js';
export { RespReader, type RespLimits, type ReadResult } from './resp-reader.js';

/** Where startKv logs (default: JSON lines on stderr at the settings' log level). */
export interface StartKvOptions {
  logger?: Logger;
  /** Environment for the token (PD3_TOKEN); default process.env. */
  env?: NodeJS.ProcessEnv;
}

/** Checks `settings` as the CLI would (throws UsageError), starts the server, logs "ready". */
export function startKv(settings: KvSettings, how: StartKvOptions = {}): Promise<KvServer> {
  const options = kvOptions(settings, how.env ?? process.env);
  return openKvServer(options, how.logger ?? new Logger('pd3-kv', options.logLevel));
}
