// resp-ycsb.ts — YCSB over ioredis against any RESP server (pd3-kv, or a real Redis as a check):
// a pipelined bulk load, then a timed run of a YCSB workload from several connections, each
// keeping `depth` requests outstanding. Reports throughput and latency percentiles.
import { Redis } from 'ioredis';
import { createWorkload, formatKey, valueBytes, type Distribution, type WorkloadName } from 'pd3/workloads';

/** What to load and run. */
export interface RespYcsbOptions {
  port: number;
  host?: string;
  workload: WorkloadName;
  distribution: Distribution;
  recordCount: number;
  valueSize: number;
  connections: number;
  /** Requests outstanding per connection. */
  depth: number;
  warmupMs: number;
  durationMs: number;
  seed: number;
}

/** One run's figures (warm-up excluded). */
export interface RespYcsbResult {
  ops: number;
  kops: number;
  p50Us: number;
  p99Us: number;
  errors: number;
}

const KEY_WIDTH = 12;

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Connects `n` clients (no offline queue: a dead server fails requests at once). */
async function connectAll(o: { port: number; host?: string }, n: number): Promise<Redis[]> {
  const clients: Redis[] = [];
  for (let i = 0; i < n; ++i) {
    const c = new Redis({ port: o.port, host: o.host ?? '127.0.0.1', lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    await c.connect();
    clients.push(c);
  }
  return clients;
}

/** Writes records 0..recordCount-1 (version 0) with pipelined SETs; calls onProgress now and then. */
export async function loadRecords(o: Pick<RespYcsbOptions, 'port' | 'host' | 'recordCount' | 'valueSize'>,
  onProgress?: (done: number) => void): Promise<void> {
  const [client] = await connectAll(o, 1);
  try {
    const BATCH = 1000;
    for (let at = 0; at < o.recordCount; at += BATCH) {
      const p = client!.pipeline();
      for (let i = at; i < Math.min(o.recordCount, at + BATCH); ++i) p.set(formatKey(i, KEY_WIDTH), valueBytes(i, 0, o.valueSize));
      const results = await p.exec();
      const failed = results?.find(([e]: [Error | null, unknown]) => e !== null);
      if (failed) throw new Error(`load: SET failed: ${String(failed[0])}`);
      onProgress?.(Math.min(o.recordCount, at + BATCH));
    }
  } finally {
    client!.disconnect();
  }
}

/** Runs the workload; READ → GET, UPDATE/INSERT → SET, RMW → GET then SET, SCAN → unsupported. */
export async function runYcsb(o: RespYcsbOptions): Promise<RespYcsbResult> {
  const clients = await connectAll(o, o.connections);
  const latencies: number[] = [];
  let errors = 0;
  let measuring = false;
  let stopping = false;
  let failure: Error | null = null;
  const workers: Promise<void>[] = [];
  clients.forEach((client, ci) => {
    const gen = createWorkload({ workload: o.workload, distribution: o.distribution, recordCount: o.recordCount, seed: o.seed * 1000 + ci, keyWidth: KEY_WIDTH, valueSize: o.valueSize });
    for (let d = 0; d < o.depth; ++d) {
      workers.push((async () => {
        while (!stopping) {
          const op = gen.next();
          const key = gen.keyOf(op.key);
          const t0 = process.hrtime.bigint();
          try {
            if (op.op === 'READ') await client.getBuffer(key);
            else if (op.op === 'UPDATE' || op.op === 'INSERT') await client.set(key, gen.valueOf(op.key, op.version ?? 0));
            else if (op.op === 'RMW') {
              await client.getBuffer(key);
              await client.set(key, gen.valueOf(op.key, op.version ?? 0));
            } else throw new Error(`YCSB op ${op.op} is not supported by this client`);
          } catch (e) {
            if (stopping) return;
            if (++errors > 100) {  // the server is gone or broken: stop, and report it below
              failure ??= e as Error;
              stopping = true;
              return;
            }
          }
          if (measuring) latencies.push(Number(process.hrtime.bigint() - t0) / 1000);
        }
      })());
    }
  });
  await new Promise((r) => setTimeout(r, o.warmupMs));
  measuring = true;
  const start = process.hrtime.bigint();
  await new Promise((r) => setTimeout(r, o.durationMs));
  measuring = false;
  const elapsedS = Number(process.hrtime.bigint() - start) / 1e9;
  const ops = latencies.length;
  stopping = true;
  await Promise.allSettled(workers);
  for (const c of clients) c.disconnect();
  if (failure !== null) throw new Error(`YCSB run failed after ${errors} errors: ${(failure as Error).message}`);
  const sorted = Float64Array.from(latencies).sort();
  return { ops, kops: ops / elapsedS / 1000, p50Us: percentile(sorted, 0.5), p99Us: percentile(sorted, 0.99), errors };
}
