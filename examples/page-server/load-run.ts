// load-run.ts — the load client: concurrent grpc-js callers issuing GetPage / PutPage over a YCSB
// page-id stream (workloads/ycsb.ts: uniform or scrambled zipfian), measuring throughput and latency,
// and with `verify` checking every page read against the model of what was written.
import { createWorkload, type Distribution, type WorkloadName, type YcsbOp } from 'pd3/workloads';
import { LatencySamples } from './latency.js';
import { pageContent } from './page-content.js';
import { PagesClient } from './pages-client.js';
import { VerifyModel } from './verify-model.js';

/** Workloads whose ops are page reads and writes (D inserts and E scans are not page operations). */
export const LOAD_WORKLOADS: readonly WorkloadName[] = ['A', 'B', 'C', 'F'];

/** What runLoad does. */
export interface LoadOptions {
  /** The page server (or the agent's tee proxy in front of it), "HOST:PORT". */
  target: string;
  /** Pages the server holds (ids 0 .. pages - 1). */
  pages: number;
  /** Concurrent callers (default 16). */
  callers?: number;
  /** Operations in the run (default 10000). */
  ops?: number;
  /** Stop after this long even if ops remain. */
  durationMs?: number;
  /** YCSB op mix: A (50% Put), B (5% Put, default), C (reads only), F (read-modify-write). */
  workload?: WorkloadName;
  /** How page ids are drawn (default uniform). */
  distribution?: Exclude<Distribution, 'latest'>;
  seed?: number;
  /** HTTP/2 connections the callers share round-robin (default 1). */
  connections?: number;
  /** Check every page read against `model` (one operation per page at a time). */
  verify?: boolean;
  /** The model to check against and update; pass the same one to later runs on the same server.
   *  Default: a fresh one (the server must hold only version-0 pages). */
  model?: VerifyModel;
}

/** What a run measured. */
export interface LoadReport {
  ops: number;
  gets: number;
  puts: number;
  errors: number;
  /** The first few error messages. */
  errorSamples: string[];
  seconds: number;
  /** Operations per second. */
  throughput: number;
  p50Us: number;
  p99Us: number;
  /** Pages checked against the model, and the first few that did not match. */
  verified: number;
  mismatches: number;
  mismatchSamples: string[];
}

const SAMPLES_KEPT = 5;

/** Runs the load; resolves with the report (errors and mismatches are counted, not thrown). */
export async function runLoad(o: LoadOptions): Promise<LoadReport> {
  const workload = o.workload ?? 'B';
  if (!LOAD_WORKLOADS.includes(workload)) throw new RangeError(`workload must be one of ${LOAD_WORKLOADS.join(', ')}, got ${workload}`);
  const totalOps = o.ops ?? 10_000;
  const generator = createWorkload({
    workload,
    distribution: o.distribution ?? 'uniform',
    recordCount: o.pages,
    operationCount: totalOps,
    seed: o.seed ?? 1,
    keyWidth: 20,
  });
  const connections = o.connections ?? 1;
  const clients = Array.from({ length: connections }, () =>
    new PagesClient(o.target, connections > 1 ? { 'grpc.use_local_subchannel_pool': 1 } : {}),
  );
  const model = o.verify === true ? (o.model ?? new VerifyModel()) : null;
  const latency = new LatencySamples();
  const report: LoadReport = {
    ops: 0, gets: 0, puts: 0, errors: 0, errorSamples: [], seconds: 0, throughput: 0, p50Us: 0, p99Us: 0,
    verified: 0, mismatches: 0, mismatchSamples: [],
  };
  const note = (list: string[], what: string): void => {
    if (list.length < SAMPLES_KEPT) list.push(what);
  };

  const get = async (client: PagesClient, id: number): Promise<void> => {
    const page = await client.getPage(id);
    report.gets++;
    if (model === null) return;
    report.verified++;
    const why = model.check(id, page);
    if (why !== null) {
      report.mismatches++;
      note(report.mismatchSamples, why);
    }
  };
  const put = async (client: PagesClient, id: number, version: number): Promise<void> => {
    const v = model?.nextVersion() ?? version;
    await client.putPage(id, pageContent(id, v));
    report.puts++;
    model?.written(id, v);
  };
  const perform = async (client: PagesClient, op: YcsbOp): Promise<void> => {
    if (op.op === 'READ') return get(client, op.key);
    if (op.op === 'UPDATE') return put(client, op.key, op.version!);
    await get(client, op.key); // RMW
    return put(client, op.key, op.version!);
  };

  const started = process.hrtime.bigint();
  const stopAt = o.durationMs === undefined ? Infinity : Date.now() + o.durationMs;
  const caller = async (index: number): Promise<void> => {
    const client = clients[index % clients.length]!;
    while (!generator.done && Date.now() < stopAt) {
      const op = generator.next();
      // Timed from the call, not from the wait for the page's previous operation (verify).
      const timed = async (): Promise<void> => {
        const t0 = process.hrtime.bigint();
        await perform(client, op);
        latency.add(Number(process.hrtime.bigint() - t0) / 1000);
      };
      try {
        await (model === null ? timed() : model.exclusive(op.key, timed));
        report.ops++;
      } catch (e) {
        report.errors++;
        note(report.errorSamples, e instanceof Error ? e.message : String(e));
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: o.callers ?? 16 }, (_, i) => caller(i)));
  } finally {
    for (const c of clients) c.close();
  }
  report.seconds = Number(process.hrtime.bigint() - started) / 1e9;
  report.throughput = report.seconds > 0 ? report.ops / report.seconds : 0;
  report.p50Us = latency.quantile(0.5);
  report.p99Us = latency.quantile(0.99);
  return report;
}
