// cli-settings.ts — pd3-page-server's flags and config keys, and the options they make.
import type { Command, SettingLayers } from 'pd3/cli';
import { optionsFromObject, parseCommand } from 'pd3/cli';
import { formatEndpoint } from 'pd3/cli';
import { LOG_LEVELS, type LogLevel } from 'pd3/cli';
import { choice, describeJson, endpoint, endpointList, integer, integerOr, path, size, text, type Setting } from 'pd3/cli';
import { resolveToken } from 'pd3/cli';
import { UsageError } from 'pd3/cli';
import { MAX_GET_PAGES, MAX_PAGES, MODES, resolveOptions, usesAgent, type PageServerOptions } from './options.js';

/** A percentage in (0, 100]. */
function percent(t: { flag: string; help: string; fallback?: string }): Setting<number> {
  const check = (n: number, shown: string): number => {
    if (!(n > 0 && n <= 100)) throw new Error(`must be above 0 and at most 100, got ${shown}`);
    return n;
  };
  return {
    ...t,
    arg: 'PERCENT',
    fromText(value) {
      if (!/^\d*\.?\d+$/.test(value.trim())) throw new Error(`must be a number such as 1 or 0.5, got "${value}"`);
      return check(Number(value), value.trim());
    },
    fromJson(value) {
      if (typeof value !== 'number') throw new Error(`must be a number such as 1 or 0.5, got ${describeJson(value)}`);
      return check(value, String(value));
    },
  };
}

/** Every setting, by config key. */
export const PAGE_SERVER_SETTINGS = {
  mode: choice(MODES, {
    flag: 'mode',
    help: 'how pages missing from the local cache are served: local (all pages local), sync (one direct remote read per miss), ' +
      'async (misses batched per event-loop turn, Redy-style), leap (sync + Leap prefetching into the cache), ' +
      'pd3-noprefetch (remote reads through the pd3-agent), pd3 (checkAndReturn first, then as pd3-noprefetch)',
  }),
  listen: endpoint({ anyPort: true, ipv4Only: false }, { flag: 'listen', help: 'gRPC address; port 0 picks a free port', fallback: '127.0.0.1:7700' }),
  pages: integer(1, MAX_PAGES, { flag: 'pages', help: 'pages served, ids 0..N-1, 4 KiB each', fallback: '65536' }),
  cachePages: integer(1, MAX_PAGES, { flag: 'cache-pages', help: 'local cache size in pages (or --cache-percent)' }),
  cachePercent: percent({ flag: 'cache-percent', help: 'local cache size as a percentage of the pages', fallback: '1' }),
  segment: text(200, { flag: 'segment', arg: 'NAME', help: 'host segment to create (/dev/shm/NAME); required in modes pd3 and pd3-noprefetch, where the pd3-agent attaches to it' }),
  memservers: endpointList({ anyPort: false, ipv4Only: false }, {
    flag: 'memservers',
    help: 'memory servers: required in sync, async and leap; in pd3 modes the fallback while the agent is down (and the load goes there before the agent starts)',
  }),
  token: text(256, { flag: 'token', help: "the memory servers' auth token (visible in ps: prefer --token-file or PD3_TOKEN)" }),
  tokenFile: path({ flag: 'token-file', arg: 'FILE', help: "file holding the memory servers' auth token" }),
  workers: integer(1, 1024, { flag: 'workers', help: 'application threads emulated: requests served at once in blocking modes (a miss stalls its worker)', fallback: '1' }),
  asyncBatch: integer(1, 4096, { flag: 'async-batch', help: 'mode async: most demand reads per batch', fallback: '64' }),
  leapWindow: integer(1, 4096, { flag: 'leap-window', help: "mode leap: Leap's largest prefetch window, in pages", fallback: '8' }),
  maxGetPages: integer(1, MAX_GET_PAGES, { flag: 'max-get-pages', help: 'most ids in one GetPages call', fallback: '256' }),
  zoneBytes: size(1 << 16, 1 << 30, { flag: 'zone-bytes', help: 'pd3 modes: Loading Zone bytes (a power of two)', fallback: '16M' }),
  zoneWaitUs: integerOr('auto', 0, 1_000_000, { flag: 'zone-wait-us', help: 'mode pd3: how long a miss waits for its Loading Zone item (the prefetch is usually in flight) before it is read; auto: twice the recent time for items to land, 100-5000 µs', fallback: 'auto' }),
  agentWaitMs: integer(0, 3_600_000, { flag: 'agent-wait-ms', help: 'pd3 modes without --memservers: how long to wait for the agent before loading', fallback: '30000' }),
  logLevel: choice(LOG_LEVELS, { flag: 'log-level', help: 'lowest level logged', fallback: 'info' }),
} as const;

/** What the CLI runs with. */
export interface PageServerCliOptions {
  server: Omit<PageServerOptions, 'logger'>;
  logLevel: LogLevel;
}

/** Builds the options from the layers of settings; throws UsageError naming the flag at fault. */
function build(layers: SettingLayers<typeof PAGE_SERVER_SETTINGS>, env: NodeJS.ProcessEnv): PageServerCliOptions {
  const m = layers.merged;
  if (m.mode === undefined) throw new UsageError(`--mode is required (one of ${MODES.join(', ')})`);
  if (m.cachePages !== undefined && m.cachePercent !== undefined) throw new UsageError('give --cache-pages or --cache-percent, not both');
  const direct = m.mode === 'sync' || m.mode === 'async' || m.mode === 'leap';
  if (direct && m.memservers === undefined) throw new UsageError(`--mode ${m.mode} reads remote memory directly: give --memservers HOST:PORT[,...]`);
  if (usesAgent(m.mode) && m.segment === undefined) throw new UsageError(`--mode ${m.mode} needs --segment NAME (the pd3-agent attaches to it)`);
  const memservers = m.mode === 'local' ? [] : (m.memservers ?? []).map(formatEndpoint);
  const token = memservers.length > 0 ? resolveToken(layers.flags, layers.file, layers.fileLabel, env.PD3_TOKEN) : undefined;
  const server: Omit<PageServerOptions, 'logger'> = {
    mode: m.mode,
    listen: formatEndpoint(m.listen ?? { host: '127.0.0.1', port: 7700 }),
    pages: m.pages,
    cachePages: m.cachePages,
    cachePercent: m.cachePercent,
    segment: m.segment,
    memservers,
    token,
    workers: m.workers,
    asyncBatch: m.asyncBatch,
    leapWindow: m.leapWindow,
    maxGetPages: m.maxGetPages,
    zoneBytes: m.zoneBytes,
    agentWaitMs: m.agentWaitMs,
    zoneWaitUs: m.zoneWaitUs,
  };
  try {
    resolveOptions(server);
  } catch (e) {
    throw new UsageError(flagNamed(e instanceof Error ? e.message : String(e)));
  }
  return { server, logLevel: m.logLevel ?? 'info' };
}

/** An option check's message ("zoneBytes must be ...") with the option named as its flag. */
function flagNamed(message: string): string {
  for (const [key, setting] of Object.entries(PAGE_SERVER_SETTINGS)) {
    if (message.startsWith(`${key} `)) return `--${setting.flag}:${message.slice(key.length)}`;
  }
  return message;
}

/** Parses pd3-page-server's command line. Throws UsageError. */
export function parsePageServerArgs(argv: readonly string[], env: NodeJS.ProcessEnv): Command<PageServerCliOptions> {
  return parseCommand(PAGE_SERVER_SETTINGS, argv, (layers) => build(layers, env));
}

/** Options from an object shaped like the config file (checked like it). Throws UsageError. */
export function pageServerCliOptions(data: object, env: NodeJS.ProcessEnv = process.env): PageServerCliOptions {
  return optionsFromObject(PAGE_SERVER_SETTINGS, data, (layers) => build(layers, env));
}
