// page-server.ts — startPageServer: a gRPC page server over the mode's page store. Remote modes create
// the host segment, load every page into remote memory, then bind the gRPC port; in-process users
// (tests, benchmarks) and the CLI start it the same way.
import * as grpc from '@grpc/grpc-js';
import { Pd3Host } from 'pd3/host';
import { CachedPageStore } from './cached-store.js';
import { pagesHandlers } from './handlers.js';
import { Lanes } from './lanes.js';
import { loadPages } from './load.js';
import { LocalPageStore } from './local-store.js';
import { modeParts } from './mode-parts.js';
import { resolveOptions, usesAgent, type PageServerMode, type PageServerOptions, type ResolvedOptions } from './options.js';
import type { PageStore } from './page-store.js';
import { pagesServiceDefinition } from './pages-service.js';
import { RemotePages } from './remote-pages.js';
import { PageServerStats, type PageServerCounters } from './stats.js';
import { WriteBack } from './write-back.js';

/** A running page server. */
export interface PageServer {
  /** The gRPC port bound. */
  readonly port: number;
  readonly mode: PageServerMode;
  readonly pages: number;
  readonly cachePages: number;
  /** The host segment (remote modes), else null. */
  readonly segment: string | null;
  /** The host library handle (remote modes), else null. */
  readonly host: Pd3Host | null;
  /** How long loading the pages took, ms. */
  readonly loadMs: number;
  /** The counters (a copy). */
  stats(): PageServerCounters;
  /** Stops serving: calls in flight finish (2 s at most), eviction writes in flight complete (3 s at
   *  most), the segment is closed. */
  close(): Promise<void>;
}

const SHUTDOWN_GRACE_MS = 2000;
const WRITEBACK_DRAIN_MS = 3000;
let directSegments = 0;

/** Starts a page server; resolves once it serves. Throws PageServerOptionError for bad options and
 *  Pd3Error when remote memory cannot be reached. */
export async function startPageServer(options: PageServerOptions): Promise<PageServer> {
  const o = resolveOptions(options);
  const stats = new PageServerStats();
  let host: Pd3Host | null = null;
  let store: PageStore | null = null;
  try {
    const started = Date.now();
    let lanes: Lanes | null = null;
    let sequentialMultiGet = false;
    if (o.mode === 'local') {
      store = new LocalPageStore(o.pages, stats);
    } else {
      host = createHost(o);
      const remote = new RemotePages(host, o.pages);
      if (usesAgent(o.mode) && o.memservers.length === 0) await waitForAgent(host, o);
      await remote.allocate();
      await loadPages(remote, o.pages);
      const parts = modeParts(o, host, remote, stats);
      const writeBack = new WriteBack(remote, stats, parts.flushObserver);
      store = new CachedPageStore(o.cachePages, writeBack, parts.missPath, parts.prefetcher, stats);
      if (parts.blocking) lanes = new Lanes(o.workers);
      sequentialMultiGet = parts.blocking;
    }
    const loadMs = Date.now() - started;
    const server = new grpc.Server();
    server.addService(
      pagesServiceDefinition(),
      pagesHandlers({ mode: o.mode, store, stats, lanes, pages: o.pages, maxGetPages: o.maxGetPages, sequentialMultiGet }),
    );
    const port = await bind(server, o);
    return running(o, server, port, store, host, stats, loadMs);
  } catch (e) {
    await store?.close(0);
    host?.close();
    throw e;
  }
}

function running(
  o: ResolvedOptions,
  server: grpc.Server,
  port: number,
  store: PageStore,
  host: Pd3Host | null,
  stats: PageServerStats,
  loadMs: number,
): PageServer {
  let closing: Promise<void> | null = null;
  const close = async (): Promise<void> => {
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => server.forceShutdown(), SHUTDOWN_GRACE_MS);
      server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
    await store.close(WRITEBACK_DRAIN_MS);
    host?.close();
  };
  return {
    port,
    mode: o.mode,
    pages: o.pages,
    cachePages: o.mode === 'local' ? o.pages : o.cachePages,
    segment: host?.name ?? null,
    host,
    loadMs,
    stats: () => stats.snapshot(),
    close: () => (closing ??= close()),
  };
}

function createHost(o: ResolvedOptions): Pd3Host {
  const direct = { directServers: o.memservers, directToken: o.token ?? undefined };
  if (!usesAgent(o.mode)) {
    const name = o.segment ?? `pd3-pages-${process.pid}-${directSegments++}`;
    return Pd3Host.create({ name, directOnly: true, ...direct });
  }
  return Pd3Host.create({
    name: o.segment!,
    loadingZoneBytes: o.zoneBytes,
    ...(o.memservers.length > 0 ? { fallback: 'direct' as const, ...direct } : { fallback: 'fail' as const }),
  });
}

async function waitForAgent(host: Pd3Host, o: ResolvedOptions): Promise<void> {
  if (host.agentAlive()) return;
  o.logger?.info('agent.waiting', `waiting up to ${o.agentWaitMs} ms for a pd3-agent on segment ${host.name}`, {
    segment: host.name,
  });
  const deadline = Date.now() + o.agentWaitMs;
  while (!host.agentAlive()) {
    if (Date.now() > deadline) throw new Error(`no pd3-agent attached to segment ${host.name} within ${o.agentWaitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function bind(server: grpc.Server, o: ResolvedOptions): Promise<number> {
  return new Promise((resolve, reject) =>
    server.bindAsync(`${o.host}:${o.port}`, grpc.ServerCredentials.createInsecure(), (e, port) => (e ? reject(e) : resolve(port))),
  );
}
