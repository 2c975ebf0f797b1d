// handlers.ts — the Pages service's calls over a PageStore: checks each request, runs it on an
// application lane (blocking modes), and answers a failure with a gRPC status, never a crash.
import * as grpc from '@grpc/grpc-js';
import { Pd3Error } from 'pd3/host';
import type { Lanes } from './lanes.js';
import type { PageServerMode } from './options.js';
import type { PageStore } from './page-store.js';
import type { WireMessage } from './pages-service.js';
import { PageRecordError } from './remote-pages.js';
import { pageDataOf, pageIdOf, pageIdsOf, RequestError } from './request-check.js';
import type { PageServerStats } from './stats.js';

/** What the handlers work with. */
export interface HandlerContext {
  mode: PageServerMode;
  store: PageStore;
  stats: PageServerStats;
  /** Application lanes of a blocking mode; null where requests never wait for one (local, async). */
  lanes: Lanes | null;
  pages: number;
  maxGetPages: number;
  /** GetPages reads its pages one after another (a blocking thread) rather than all at once. */
  sequentialMultiGet: boolean;
}

// A grpc-js unary handler of this service.
type Unary = (call: grpc.ServerUnaryCall<WireMessage, WireMessage>, callback: grpc.sendUnaryData<WireMessage>) => void;

/** The service implementation for grpc.Server.addService. */
export function pagesHandlers(ctx: HandlerContext): grpc.UntypedServiceImplementation {
  const unary = (work: (request: WireMessage) => WireMessage | Promise<WireMessage>, onLane: boolean): Unary =>
    (call, callback) => {
      const run = (): WireMessage | Promise<WireMessage> => work(call.request);
      let answer: Promise<WireMessage>;
      try {
        answer = onLane && ctx.lanes !== null ? ctx.lanes.run(run) : Promise.resolve(run());
      } catch (e) {
        answer = Promise.reject(e);
      }
      answer.then(
        (value) => callback(null, value),
        (e: unknown) => callback(toStatus(e, ctx.stats)),
      );
    };

  const getPage = (request: WireMessage): WireMessage | Promise<WireMessage> => {
    const id = pageIdOf(request.id, ctx.pages);
    ctx.stats.gets++;
    const page = ctx.store.get(id);
    return page instanceof Promise ? page.then((data) => ({ id, data })) : { id, data: page };
  };

  const getPages = async (request: WireMessage): Promise<WireMessage> => {
    const ids = pageIdsOf(request, ctx.pages, ctx.maxGetPages);
    ctx.stats.gets += ids.length;
    const pages: WireMessage[] = [];
    if (ctx.sequentialMultiGet) {
      for (const id of ids) pages.push({ id, data: await ctx.store.get(id) });
    } else {
      const all = await Promise.all(ids.map((id) => ctx.store.get(id)));
      all.forEach((data, i) => pages.push({ id: ids[i], data }));
    }
    return { pages };
  };

  const putPage = (request: WireMessage): WireMessage => {
    const id = pageIdOf(request.id, ctx.pages);
    ctx.store.put(id, pageDataOf(request));
    ctx.stats.puts++;
    return {};
  };

  const stats = (): WireMessage => {
    const out: WireMessage = { mode: ctx.mode };
    for (const [name, value] of Object.entries(ctx.stats.snapshot())) out[snakeCase(name)] = value;
    return out;
  };

  return {
    GetPage: unary(getPage, true),
    GetPages: unary(getPages, true),
    PutPage: unary(putPage, true),
    Stats: unary(stats, false),
  };
}

// The status a failure is answered with: the request's own fault, the remote memory's, or a bug.
function toStatus(e: unknown, stats: PageServerStats): Partial<grpc.StatusObject> {
  if (e instanceof RequestError) {
    stats.badRequests++;
    return { code: e.code, details: e.message };
  }
  if (e instanceof Pd3Error) return { code: grpc.status.UNAVAILABLE, details: `remote memory: ${e.message}` };
  if (e instanceof PageRecordError) return { code: grpc.status.DATA_LOSS, details: e.message };
  return { code: grpc.status.INTERNAL, details: e instanceof Error ? e.message : String(e) };
}

function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
