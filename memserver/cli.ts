#!/usr/bin/env node
// cli.ts — pd3-memserver: runs a memory server from flags and a config file (see docs/cli.md);
// `pd3-memserver credential --tenant NAME` prints a tenant's credential instead.
import { runDeployable } from '../cli/daemon.js';
import { EXIT_USAGE, UsageError } from '../cli/usage-error.js';
import { memServerHelp, parseMemServerCommand } from './config.js';

if (process.argv[2] === 'credential') {
  const { credentialCommand } = await import('./credential-command.js');
  try {
    // The context string is the C header's, so the addon is loaded only for this subcommand.
    const { constants } = await import('./native.js');
    process.stdout.write(credentialCommand(process.argv.slice(3), process.env, constants.TENANT_CREDENTIAL_CONTEXT));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`pd3-memserver credential: ${e.message}\nRun 'pd3-memserver credential --help' for the flags.\n`);
    process.exit(EXIT_USAGE);
  }
} else {
  await runDeployable({
    name: 'pd3-memserver',
    component: 'memserver',
    parse: parseMemServerCommand,
    help: memServerHelp,
    // Loaded only to run: --help, --version and config errors work without the native addon.
    start: async (options, logger) => (await import('./server.js')).MemServer.start(options, logger),
  });
}
