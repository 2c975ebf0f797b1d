#!/usr/bin/env node
// cli.ts — pd3-memserver: runs a memory server from flags and a config file (see docs/cli.md).
import { runDeployable } from '../cli/daemon.js';
import { memServerHelp, parseMemServerCommand } from './config.js';

await runDeployable({
  name: 'pd3-memserver',
  component: 'memserver',
  parse: parseMemServerCommand,
  help: memServerHelp,
  // Loaded only to run: --help, --version and config errors work without the native addon.
  start: async (options, logger) => (await import('./server.js')).MemServer.start(options, logger),
});
