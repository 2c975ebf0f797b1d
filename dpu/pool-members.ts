// pool-members.ts — the memory servers registered in the pool's etcd, read once: what an agent
// started with --etcd serves. A malformed record is skipped with a log line, never half-read.
// docs/pool.md.
import { Etcd3 } from 'etcd3';
import type { Logger } from '../cli/logger.js';
import { ETCD_CALL_DEADLINE_MS, type PoolOptions } from '../cli/pool-settings.js';
import { membersPrefix, parseMemberRecord, PoolRecordError, type MemberRecord } from '../common/pool-record.js';

/** The members registered under `pool.prefix` now, by server id. Rejects with an Error naming the
 *  endpoints when etcd cannot be read. */
export async function readPoolMembers(pool: Pick<PoolOptions, 'endpoints' | 'prefix'>, logger: Logger): Promise<MemberRecord[]> {
  const client = new Etcd3({ hosts: pool.endpoints, dialTimeout: ETCD_CALL_DEADLINE_MS });
  const folder = membersPrefix(pool.prefix);
  let records: Record<string, string>;
  try {
    records = await client.getAll().prefix(folder).options({ deadline: Date.now() + ETCD_CALL_DEADLINE_MS }).strings();
  } catch (e) {
    throw new Error(`cannot read the pool's members from etcd (${pool.endpoints.join(', ')}): ${(e as Error).message}`);
  } finally {
    client.close();
  }
  const members: MemberRecord[] = [];
  for (const [key, text] of Object.entries(records)) {
    try {
      members.push(parseMemberRecord(pool.prefix, key, text));
    } catch (e) {
      if (!(e instanceof PoolRecordError)) throw e;
      logger.warn('pool.bad_record', `skipped a malformed membership record: ${e.message}`, { key });
    }
  }
  return members.sort((a, b) => a.serverId - b.serverId);
}
