// commands-keys.ts — commands on keys rather than values: DEL, UNLINK, EXISTS, TYPE, the EXPIRE
// family (EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT with NX/XX/GT/LT), TTL, PTTL, EXPIRETIME,
// PEXPIRETIME, PERSIST. None reads a value: the index and the expiry table answer them.
import { expireCommandAt, isWord, type ExpireUnit } from './args.js';
import type { Command } from './command.js';
import { ReplyError } from './reply-error.js';

const ONE_KEY = [1, 1, 1] as const;

function deleting(name: string): Command {
  return {
    name, arity: -2, flags: ['write'], keys: [1, -1, 1],
    run({ store, out }, args) {
      let n = 0;
      for (let i = 1; i < args.length; ++i) if (store.delete(args[i]!)) n++;
      out.integer(n);
    },
  };
}

const exists: Command = {
  name: 'exists', arity: -2, flags: ['readonly', 'fast'], keys: [1, -1, 1],
  run({ store, out }, args) {
    let n = 0;
    for (let i = 1; i < args.length; ++i) if (store.exists(args[i]!)) n++;
    out.integer(n);
  },
};

const type: Command = {
  name: 'type', arity: 2, flags: ['readonly', 'fast'], keys: ONE_KEY,
  run({ store, out }, args) {
    out.simple(store.exists(args[1]!) ? 'string' : 'none');
  },
};

function expire(name: string, unit: ExpireUnit): Command {
  return {
    name, arity: -3, flags: ['write', 'fast'], keys: ONE_KEY,
    run({ store, out }, args) {
      // Redis' order: the options (unknown ones, then conflicts), then the time, then the key.
      let nx = false;
      let xx = false;
      let gt = false;
      let lt = false;
      for (let i = 3; i < args.length; ++i) {
        const a = args[i]!;
        if (isWord(a, 'NX')) nx = true;
        else if (isWord(a, 'XX')) xx = true;
        else if (isWord(a, 'GT')) gt = true;
        else if (isWord(a, 'LT')) lt = true;
        else throw new ReplyError(`ERR Unsupported option ${a.toString('latin1')}`);
      }
      if (nx && (xx || gt || lt)) throw new ReplyError('ERR NX and XX, GT or LT options at the same time are not compatible');
      if (gt && lt) throw new ReplyError('ERR GT and LT options at the same time are not compatible');
      const at = expireCommandAt(unit, args[2]!, name);
      const current = store.expireTime(args[1]!);
      if (current === undefined) {
        out.integer(0);
        return;
      }
      // A key without expiry counts as expiring never (infinitely late) for GT and LT.
      const refused = (nx && current !== null) || (xx && current === null) ||
        (gt && (current === null || at <= current)) || (lt && current !== null && at >= current);
      if (refused) {
        out.integer(0);
        return;
      }
      if (at <= BigInt(Date.now())) store.delete(args[1]!);
      else store.setExpireTime(args[1]!, at);
      out.integer(1);
    },
  };
}

function remaining(at: bigint): bigint {
  const ms = at - BigInt(Date.now());
  return ms < 0n ? 0n : ms;
}

function ttl(name: string, report: (atMs: bigint) => bigint): Command {
  return {
    name, arity: 2, flags: ['readonly', 'fast'], keys: ONE_KEY,
    run({ store, out }, args) {
      const at = store.expireTime(args[1]!);
      out.integer(at === undefined ? -2 : at === null ? -1 : report(at));
    },
  };
}

const persist: Command = {
  name: 'persist', arity: 2, flags: ['write', 'fast'], keys: ONE_KEY,
  run({ store, out }, args) {
    const at = store.expireTime(args[1]!);
    if (at === undefined || at === null) {
      out.integer(0);
      return;
    }
    store.setExpireTime(args[1]!, null);
    out.integer(1);
  },
};

/** Every key command. */
export const KEY_COMMANDS: readonly Command[] = [
  deleting('del'), deleting('unlink'), exists, type,
  expire('expire', 'EX'), expire('pexpire', 'PX'), expire('expireat', 'EXAT'), expire('pexpireat', 'PXAT'),
  // Seconds are rounded to nearest ((ms + 500) / 1000, as Redis' ttlGenericCommand); a stored time
  // is always in the future, so nothing here is negative and C's truncation is floor.
  ttl('ttl', (at) => (remaining(at) + 500n) / 1000n),
  ttl('pttl', (at) => remaining(at)),
  ttl('expiretime', (at) => (at + 500n) / 1000n),
  ttl('pexpiretime', (at) => at),
  persist,
];
