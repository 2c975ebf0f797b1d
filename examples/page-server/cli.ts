#!/usr/bin/env node
// cli.ts — pd3-page-server: the page server example as a process (flags, JSON logs on stderr, a
// "ready" line with the port, clean stop on SIGINT/SIGTERM).
import { runDeployable, type Deployable } from 'pd3/cli';
import { pageServerHelp } from './cli-help.js';
import { parsePageServerArgs, type PageServerCliOptions } from './cli-settings.js';
import { startPageServer } from './page-server.js';

const pageServer: Deployable<PageServerCliOptions> = {
  name: 'pd3-page-server',
  component: 'page-server',
  parse: parsePageServerArgs,
  help: pageServerHelp,
  async start(options, logger) {
    const server = await startPageServer({ ...options.server, logger });
    logger.info('ready', `mode ${server.mode}: ${server.pages} pages, ${server.cachePages} cached, serving gRPC on port ${server.port}`, {
      listen: options.server.listen,
      port: server.port,
      mode: server.mode,
      pages: server.pages,
      cachePages: server.cachePages,
      segment: server.segment,
      memservers: options.server.memservers ?? [],
      workers: options.server.workers ?? 1,
      loadMs: server.loadMs,
    });
    return {
      async close() {
        logger.info('stats', 'counters at stop', server.stats());
        await server.close();
      },
    };
  },
};

await runDeployable(pageServer);
