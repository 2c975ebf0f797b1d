// pool-members.ts — the memory servers registered in the pool's etcd, listed at one revision: what
// an agent started with --etcd serves first and re-reads after etcd was out of reach, and where a
// direct-mode host finds its servers. A malformed record is skipped with a log line, never
// half-read. docs/pool.md.
import type { Etcd3 } from 'etcd3';
import { ETCD_CALL_DEADLINE_MS, membersPrefix, parseMemberRecord, PoolRecordError, type MemberRecord } from './pool-record.js';

/** Where a skipped record is reported (a Logger fits). */
export interface BadRecordLog {
  warn(event: string, message: string, fields: { key: string }): void;
}

/** The members registered at one etcd revision. */
export interface PoolSnapshot {
  /** By server id. */
  members: MemberRecord[];
  /** The etcd revision they were read at: a watch from the next one misses no change. */
  revision: string;
}

/** The members registered under `prefix` now. Rejects with etcd's error when it cannot be read
 *  within ETCD_CALL_DEADLINE_MS. `onBad` hears of each malformed record skipped. */
export async function listPoolMembers(client: Etcd3, prefix: string, logger: BadRecordLog, onBad: () => void = () => {}): Promise<PoolSnapshot> {
  const reply = await client.getAll().prefix(membersPrefix(prefix)).options({ deadline: Date.now() + ETCD_CALL_DEADLINE_MS }).exec();
  const members: MemberRecord[] = [];
  for (const kv of reply.kvs) {
    const record = readMember(prefix, kv.key.toString(), kv.value.toString(), logger);
    if (record === null) onBad();
    else members.push(record);
  }
  return { members: members.sort((a, b) => a.serverId - b.serverId), revision: reply.header.revision };
}

/** The record at `key`, or null when it is malformed (logged as pool.bad_record). */
export function readMember(prefix: string, key: string, text: string, logger: BadRecordLog): MemberRecord | null {
  try {
    return parseMemberRecord(prefix, key, text);
  } catch (e) {
    if (!(e instanceof PoolRecordError)) throw e;
    logger.warn('pool.bad_record', `skipped a malformed membership record: ${e.message}`, { key });
    return null;
  }
}
