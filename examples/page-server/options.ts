// options.ts — what a page server is started with (startPageServer, and the CLI after its flags are
// read), the defaults, and the check that turns them into the settings it runs with.
import type { Logger } from 'pd3/cli';

/** How pages that are not in the local cache are served. */
export type PageServerMode = 'local' | 'sync' | 'async' | 'leap' | 'pd3-noprefetch' | 'pd3';

/** Every mode, in the order the docs list them. */
export const MODES: readonly PageServerMode[] = ['local', 'sync', 'async', 'leap', 'pd3-noprefetch', 'pd3'];

/** Largest page count: ids stay far below 2^53 and their keys at most 10 digits. */
export const MAX_PAGES = 2 ** 32;
/** Largest GetPages call: its answer must fit grpc-js's default 4 MiB message limit. */
export const MAX_GET_PAGES = 1000;

/** Options of startPageServer. */
export interface PageServerOptions {
  mode: PageServerMode;
  /** gRPC listen address "HOST:PORT"; port 0 picks a free one (default "127.0.0.1:0"). */
  listen?: string;
  /** Pages served: ids 0 .. pages - 1 (default 65536). */
  pages?: number;
  /** Local cache size in pages; give this or cachePercent (default: 1% of the pages, at least 1). */
  cachePages?: number;
  /** Local cache size as a percentage of the pages, in (0, 100]. */
  cachePercent?: number;
  /** Host segment name (/dev/shm/NAME). Required in pd3 modes (the agent attaches to it); direct
   *  modes make up one when it is absent. */
  segment?: string;
  /** Memory servers "HOST:PORT": required in sync, async and leap; in pd3 modes they are the
   *  fallback while the agent is down (and let the server load its pages before the agent starts). */
  memservers?: string[];
  /** The memory servers' auth token (needed with memservers). */
  token?: string;
  /** Application threads emulated: requests handled at once in blocking modes (default 1). */
  workers?: number;
  /** Mode async: most demand reads per batch (default 64). */
  asyncBatch?: number;
  /** Mode leap: largest prefetch window, in pages (default 8). */
  leapWindow?: number;
  /** Most ids in one GetPages call (default 256, at most MAX_GET_PAGES). */
  maxGetPages?: number;
  /** pd3 modes: Loading Zone bytes, a power of two (default 16 MiB). */
  zoneBytes?: number;
  /** pd3 modes without memservers: how long to wait for the agent before loading (default 30 s). */
  agentWaitMs?: number;
  /** Mode pd3: µs a miss waits for its Loading Zone item before it is read, or 'auto' (the
   *  default): twice the recent time for items to land (pd3/host's AdaptiveZoneWait). */
  zoneWaitUs?: number | 'auto';
  /** Where the server logs (default: nothing). */
  logger?: Logger;
}

/** The options after defaults and checks. */
export interface ResolvedOptions {
  mode: PageServerMode;
  host: string;
  port: number;
  pages: number;
  cachePages: number;
  segment: string | null;
  memservers: string[];
  token: string | null;
  workers: number;
  asyncBatch: number;
  leapWindow: number;
  maxGetPages: number;
  zoneBytes: number;
  agentWaitMs: number;
  zoneWaitUs: number | 'auto';
  logger: Logger | null;
}

/** An option that cannot be used; the message names it. */
export class PageServerOptionError extends Error {
  override readonly name = 'PageServerOptionError';
}

const SEGMENT_NAME = /^[A-Za-z0-9._-]{1,200}$/;

/** True for the modes whose remote memory is reached through the PD3 agent. */
export function usesAgent(mode: PageServerMode): boolean {
  return mode === 'pd3' || mode === 'pd3-noprefetch';
}

/** Applies the defaults and checks every option; throws PageServerOptionError. */
export function resolveOptions(o: PageServerOptions): ResolvedOptions {
  const fail = (why: string): never => {
    throw new PageServerOptionError(why);
  };
  if (!MODES.includes(o.mode)) fail(`mode must be one of ${MODES.join(', ')}, got ${JSON.stringify(o.mode)}`);
  const [host, port] = splitListen(o.listen ?? '127.0.0.1:0', fail);
  const pages = whole('pages', o.pages ?? 65536, 1, MAX_PAGES, fail);
  if (o.cachePages !== undefined && o.cachePercent !== undefined) fail('give cachePages or cachePercent, not both');
  let cachePages: number;
  if (o.cachePages !== undefined) {
    cachePages = Math.min(whole('cachePages', o.cachePages, 1, MAX_PAGES, fail), pages);
  } else {
    const percent = o.cachePercent ?? 1;
    if (typeof percent !== 'number' || !(percent > 0 && percent <= 100)) fail(`cachePercent must be in (0, 100], got ${percent}`);
    cachePages = Math.max(1, Math.floor((pages * percent) / 100));
  }
  const direct = !usesAgent(o.mode) && o.mode !== 'local';
  const memservers = o.memservers ?? [];
  if (direct && memservers.length === 0) fail(`mode ${o.mode} reads remote memory directly: give memservers`);
  if (usesAgent(o.mode) && o.segment === undefined) fail(`mode ${o.mode} needs segment (the agent attaches to it)`);
  if (o.segment !== undefined && !SEGMENT_NAME.test(o.segment)) fail(`segment must be 1-200 characters of [A-Za-z0-9._-], got ${JSON.stringify(o.segment)}`);
  if (memservers.length > 0 && o.mode !== 'local' && (o.token === undefined || o.token === '')) fail('memservers need the auth token');
  if (o.zoneWaitUs !== undefined && o.mode !== 'pd3') fail(`zoneWaitUs applies to mode pd3 only, not ${o.mode}`);
  const zoneBytes = whole('zoneBytes', o.zoneBytes ?? 16 << 20, 1 << 16, 1 << 30, fail);
  if ((zoneBytes & (zoneBytes - 1)) !== 0) fail(`zoneBytes must be a power of two, got ${zoneBytes}`);
  return {
    mode: o.mode,
    host,
    port,
    pages,
    cachePages,
    segment: o.segment ?? null,
    memservers: o.mode === 'local' ? [] : memservers,
    token: o.token ?? null,
    workers: whole('workers', o.workers ?? 1, 1, 1024, fail),
    asyncBatch: whole('asyncBatch', o.asyncBatch ?? 64, 1, 4096, fail),
    leapWindow: whole('leapWindow', o.leapWindow ?? 8, 1, 4096, fail),
    maxGetPages: whole('maxGetPages', o.maxGetPages ?? 256, 1, MAX_GET_PAGES, fail),
    zoneBytes,
    agentWaitMs: whole('agentWaitMs', o.agentWaitMs ?? 30_000, 0, 3_600_000, fail),
    zoneWaitUs: o.zoneWaitUs === undefined || o.zoneWaitUs === 'auto' ? 'auto' : whole('zoneWaitUs', o.zoneWaitUs, 0, 1_000_000, fail),
    logger: o.logger ?? null,
  };
}

function whole(name: string, v: unknown, min: number, max: number, fail: (why: string) => never): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) {
    fail(`${name} must be a whole number from ${min} to ${max}, got ${String(v)}`);
  }
  return v as number;
}

function splitListen(text: string, fail: (why: string) => never): [string, number] {
  const colon = text.lastIndexOf(':');
  const portText = text.slice(colon + 1);
  if (colon <= 0 || !/^\d{1,5}$/.test(portText) || Number(portText) > 65535) {
    fail(`listen must be "HOST:PORT" with a port from 0 to 65535, got ${JSON.stringify(text)}`);
  }
  return [text.slice(0, colon), Number(portText)];
}
