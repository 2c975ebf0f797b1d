#!/usr/bin/env node
// cli.ts — `pd3-kv`: the RESP key-value store as a process (flags and config as in docs/cli.md;
// JSON logs on stderr with a "ready" line; SIGINT/SIGTERM close it cleanly; bad flags exit 2).
import { runDeployable } from 'pd3/cli';
import { kvHelp, parseKvCommand, type KvOptions } from './config.js';
import { openKvServer } from './server.js';

await runDeployable<KvOptions>({
  name: 'pd3-kv',
  component: 'pd3-kv',
  parse: parseKvCommand,
  help: kvHelp,
  start: (options, logger) => openKvServer(options, logger),
});
