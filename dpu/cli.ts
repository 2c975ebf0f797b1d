#!/usr/bin/env node
// cli.ts — pd3-agent: runs the agent's Transfer Engine from flags and a config file (see docs/cli.md).
import { agentHelp, parseAgentCommand } from './agent-config.js';
import { runDeployable } from '../cli/daemon.js';

await runDeployable({
  name: 'pd3-agent',
  component: 'agent',
  parse: parseAgentCommand,
  help: agentHelp,
  // Loaded only to run: --help, --version and config errors work without the native addon.
  start: async (options, logger) => (await import('./agent.js')).Agent.start(options, logger),
});
