// region-move.ts — one move of a named region from one memory server to another, keeping every
// acknowledged write: freeze the source (its WRITEs answer PD3_E_MOVED, READs go on), copy its
// bytes into a region allocated on the target for the same tenant (the WRITEs index its keys
// there), seal the source (every access answers PD3_E_MOVED), then switch the name record in one
// etcd transaction that compares the record's revision and the migrator's leader lease. Any
// failure before the switch thaws the source and frees the copy. docs/pool.md "Moving hot regions".
import type { Etcd3 } from 'etcd3';
import { encodeRegionNameRecord, parseRegionNameRecord } from '../common/tenant-record.js';
import { PoolRecordError } from '../common/pool-record.js';
import type { NativeConstants } from '../common/constants.js';
import type { NativeTransportClient } from './native.js';

/** What to move, as the migrator found it. */
export interface MovePlan {
  tenant: string;
  /** The region-name record's key and the revision it was read at. */
  key: string;
  modRevision: string;
  region: number;
  capacity: number;
  fromAddress: string;
  toAddress: string;
}

/** What a move needs of the migrator. */
export interface MoveContext {
  client: Etcd3;
  constants: NativeConstants;
  /** A connected client for `tenant` at `address` (rejects when it cannot connect). */
  connect(address: string, tenant: string): Promise<NativeTransportClient>;
  /** The leader key and the lease it must still be held under for the switch. */
  leaderKey: string;
  leaseId: string;
}

/** Where a move failed. */
export type MoveStage = 'freeze' | 'allocate' | 'copy' | 'seal' | 'switch';

/** How a move ended. `done`: the name names the copy; `aborted`: the name still names the source,
 *  which serves again (thawed); `unresolved`: whether the switch happened could not be learnt, so
 *  the source stays sealed (refusing every access: nothing is lost, the region is unavailable). */
export type MoveOutcome =
  | { kind: 'done'; copy: number; bytes: number }
  | { kind: 'aborted'; stage: MoveStage; reason: string; cleanup: string[] }
  | { kind: 'unresolved'; reason: string };

/** Thrown by a step that failed: which stage, and why. */
class StageError extends Error {
  constructor(
    readonly stage: MoveStage,
    message: string,
  ) {
    super(message);
  }
}

/** Moves `plan.region` to `plan.toAddress`. Never rejects: the outcome says what happened. */
export async function moveRegion(plan: MovePlan, ctx: MoveContext): Promise<MoveOutcome> {
  const C = ctx.constants;
  const statusName = (status: number): string => Object.entries(C.status).find(([, v]) => v === status)?.[0] ?? String(status);
  const control = async (conn: NativeTransportClient, op: number, region: number, stage: MoveStage): Promise<void> => {
    const r = await conn.request(C.OP_CONTROL, op, region, 0);
    if (r.status !== 0) throw new StageError(stage, `${statusName(r.status)} from ${stage} of region ${region}`);
  };
  const attempt = async <T>(stage: MoveStage, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (e) {
      throw e instanceof StageError ? e : new StageError(stage, (e as Error).message);
    }
  };

  let opened: NativeTransportClient | null = null;
  let reached: NativeTransportClient | null = null;
  let copy = 0;
  let frozen = false;
  let source: NativeTransportClient;
  let target: NativeTransportClient;
  try {
    source = opened = await attempt('freeze', () => ctx.connect(plan.fromAddress, plan.tenant));
    await attempt('freeze', () => control(source, C.CTL_FREEZE, plan.region, 'freeze'));
    frozen = true;
    target = reached = await attempt('allocate', () => ctx.connect(plan.toAddress, plan.tenant));
    copy = await attempt('allocate', () => allocate(target, plan.capacity, C, statusName));
    await attempt('copy', () => copyBytes(source, target, plan.region, copy, plan.capacity, C, statusName));
    await attempt('seal', () => control(source, C.CTL_SEAL, plan.region, 'seal'));
  } catch (e) {
    const err = e as StageError;
    return { kind: 'aborted', stage: err.stage, reason: err.message, cleanup: await undo(plan, ctx, opened, reached, frozen, copy) };
  }
  // The switch: the name moves to the copy only if nobody changed it since it was read, and only
  // while this server still leads (a deposed leader's late transaction fails).
  const record = encodeRegionNameRecord({ region: copy, capacity: plan.capacity });
  try {
    const switched = await ctx.client
      .if(plan.key, 'Mod', '==', plan.modRevision)
      .and(ctx.leaderKey, 'Lease', '==', ctx.leaseId)
      .then(ctx.client.put(plan.key).value(record))
      .commit();
    if (!switched.succeeded) {
      const reason = 'the name record changed since it was read, or this server no longer leads the migrator';
      return { kind: 'aborted', stage: 'switch', reason, cleanup: await undo(plan, ctx, source, target, true, copy) };
    }
  } catch (e) {
    return settleUnknownSwitch(plan, ctx, source, target, copy, (e as Error).message);
  }
  source.close();
  target.close();
  return { kind: 'done', copy, bytes: plan.capacity };
}

// ALLOCATE on the target: the copy's region id.
async function allocate(target: NativeTransportClient, capacity: number, C: NativeConstants, name: (s: number) => string): Promise<number> {
  const r = await target.request(C.OP_CONTROL, C.CTL_ALLOCATE, 0, capacity);
  if (r.status !== 0) throw new StageError('allocate', `${name(r.status)} allocating ${capacity} bytes on the target`);
  const region = r.data.readUInt32LE(C.ALLOC_REPLY_REGION);
  const got = r.data.readUInt32LE(C.ALLOC_REPLY_CAPACITY);
  if (got < capacity) throw new StageError('allocate', `the target gave ${got} bytes, not ${capacity}`);
  return region;
}

// Copies [0, capacity) in pieces as large as both connections carry: one piece when the region fits
// one frame, so every record in it is indexed on the target (a record cut by a piece boundary is
// copied but not indexed: its prefetches miss until it is written again).
async function copyBytes(
  source: NativeTransportClient,
  target: NativeTransportClient,
  from: number,
  to: number,
  capacity: number,
  C: NativeConstants,
  name: (s: number) => string,
): Promise<void> {
  const piece = Math.min(source.maxPayload(), target.maxPayload(), capacity);
  for (let offset = 0; offset < capacity; offset += piece) {
    const size = Math.min(piece, capacity - offset);
    const read = await source.request(C.OP_READ, from, offset, size);
    if (read.status !== 0) throw new StageError('copy', `${name(read.status)} reading ${size} bytes at ${offset} of the source`);
    const wrote = await target.request(C.OP_WRITE, to, offset, size, read.data);
    if (wrote.status !== 0) throw new StageError('copy', `${name(wrote.status)} writing ${size} bytes at ${offset} of the copy`);
  }
}

// Gives a move up before its switch: the source serves again, the copy is freed. Returns what could
// not be undone (the source thaw or the copy's free), for the log.
async function undo(
  plan: MovePlan,
  ctx: MoveContext,
  source: NativeTransportClient | null,
  target: NativeTransportClient | null,
  frozen: boolean,
  copy: number,
): Promise<string[]> {
  const C = ctx.constants;
  const left: string[] = [];
  // On the step's own connection if it is still open, else (or after it failed) on a new one.
  const retry = async (conn: NativeTransportClient | null, address: string, op: number, arg: number, what: string): Promise<void> => {
    for (const reuse of [true, false]) {
      let c: NativeTransportClient | null = null;
      try {
        c = reuse && conn !== null && conn.connected() ? conn : await ctx.connect(address, plan.tenant);
        const r = await c.request(C.OP_CONTROL, op, arg, 0);
        // BAD_REGION: the region is gone (its server lost it, or the client freed it): nothing to undo.
        if (r.status !== 0 && r.status !== C.status.PD3_E_BAD_REGION) left.push(`${what}: status ${r.status}`);
        return;
      } catch (e) {
        if (!reuse) left.push(`${what}: ${(e as Error).message}`);
      } finally {
        if (c !== null && c !== conn) c.close();
      }
    }
  };
  if (frozen) await retry(source, plan.fromAddress, C.CTL_THAW, plan.region, `thaw region ${plan.region}`);
  if (copy !== 0) await retry(target, plan.toAddress, C.CTL_DEALLOCATE, copy, `free copy ${copy}`);
  source?.close();
  target?.close();
  return left;
}

// The switch's transaction failed without an answer: it may or may not have been applied. Fence
// it first (rewrite the record unchanged if it is still at the revision read, which makes the
// switch's comparison fail forever), then read which region the name names.
async function settleUnknownSwitch(
  plan: MovePlan,
  ctx: MoveContext,
  source: NativeTransportClient,
  target: NativeTransportClient,
  copy: number,
  why: string,
): Promise<MoveOutcome> {
  try {
    const got = await ctx.client.get(plan.key).exec();
    const kv = got.kvs[0];
    if (kv !== undefined && kv.mod_revision === plan.modRevision) {
      const fenced = await ctx.client.if(plan.key, 'Mod', '==', plan.modRevision).then(ctx.client.put(plan.key).value(kv.value)).commit();
      if (fenced.succeeded) {
        return { kind: 'aborted', stage: 'switch', reason: why, cleanup: await undo(plan, ctx, source, target, true, copy) };
      }
    }
    const now = (await ctx.client.get(plan.key).string()) ?? null;
    if (now !== null && parseRegionNameRecord(plan.key, now).region === copy) {
      source.close();
      target.close();
      return { kind: 'done', copy, bytes: plan.capacity };
    }
    // Changed by someone else (deleted, or another region): the copy is nobody's.
    return { kind: 'aborted', stage: 'switch', reason: why, cleanup: await undo(plan, ctx, source, target, true, copy) };
  } catch (e) {
    source.close();
    target.close();
    const what = e instanceof PoolRecordError ? `a malformed name record (${e.message})` : (e as Error).message;
    return { kind: 'unresolved', reason: `${why}; then ${what}` };
  }
}
