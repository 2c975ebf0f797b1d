// tenant-gets.ts — the client of the two-tenant isolation check: GETs for every key of one tenant
// (tenant-values.ts) through that tenant's tee proxy, in pipelined batches, each reply judged for
// the tenant — the values the client gets back are checked as well as those the app obtained.
import { Redis } from 'ioredis';
import { noVerdicts, tenantKey, type TenantValues, type VerdictCounts } from './tenant-values.js';

/** What one client's pass over the keys got. */
export interface GetPass {
  verdicts: VerdictCounts;
  /** Wall-clock milliseconds of the pass. */
  ms: number;
}

/** GETs key:0 … key:N-1 of `values` (N: `count`, default all) through 127.0.0.1:`port`, `batch`
 *  at a time (one pipeline each). */
export async function getEveryKey(port: number, values: TenantValues, batch = 100, count = values.count): Promise<GetPass> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1, enableReadyCheck: false, enableOfflineQueue: false });
  const verdicts = noVerdicts();
  const start = Date.now();
  try {
    await client.connect();
    for (let at = 0; at < count; at += batch) {
      const keys = Array.from({ length: Math.min(batch, count - at) }, (_, j) => tenantKey(at + j));
      const pipeline = client.pipeline();
      for (const k of keys) pipeline.get(k);
      const replies = (await pipeline.exec()) ?? [];
      keys.forEach((k, j) => {
        const [err, value] = replies[j] ?? [new Error('no reply'), null];
        verdicts[values.judge(k, err === null && typeof value === 'string' ? value : null)]++;
      });
    }
  } finally {
    client.disconnect();
  }
  return { verdicts, ms: Date.now() - start };
}
