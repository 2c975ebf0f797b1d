// commands-strings.ts — the string commands: GET, SET (NX, XX, GET, EX, PX, EXAT, PXAT, KEEPTTL),
// SETNX, SETEX, PSETEX, GETSET, GETDEL, GETEX, MGET, MSET, MSETNX, APPEND, STRLEN, GETRANGE,
// SETRANGE.
import { expireUnit, integerArg, isWord, setExpireAt, type ExpireUnit } from './args.js';
import type { Command, CommandContext } from './command.js';
import type { TtlUpdate } from './kv-store.js';
import { ReplyError } from './reply-error.js';

const SYNTAX = 'ERR syntax error';
const ONE_KEY = [1, 1, 1] as const;
const firstKey = (args: readonly Buffer[]): Buffer[] => [args[1]!];
const allKeys = (args: readonly Buffer[]): Buffer[] => args.slice(1);

const get: Command = {
  name: 'get', arity: 2, flags: ['readonly', 'fast'], keys: ONE_KEY, reads: firstKey,
  run({ store, out }, args) {
    out.bulk(store.get(args[1]!));
  },
};

/** SET's options, checked. */
interface SetOptions {
  nx: boolean;
  xx: boolean;
  get: boolean;
  ttl: TtlUpdate;
}

// Redis (parseExtendedStringArgumentsOrReply) refuses two different expiry options but lets one be
// repeated, the last value winning; NX and XX exclude each other, each may repeat.
function setOptions(args: readonly Buffer[]): SetOptions {
  const o: SetOptions = { nx: false, xx: false, get: false, ttl: 'none' };
  let kind: ExpireUnit | 'KEEPTTL' | null = null;
  let time: Buffer | null = null;
  for (let i = 3; i < args.length; ++i) {
    const a = args[i]!;
    const unit = expireUnit(a);
    if (isWord(a, 'NX') && !o.xx) o.nx = true;
    else if (isWord(a, 'XX') && !o.nx) o.xx = true;
    else if (isWord(a, 'GET')) o.get = true;
    else if (isWord(a, 'KEEPTTL') && (kind === null || kind === 'KEEPTTL')) kind = 'KEEPTTL';
    else if (unit !== null && (kind === null || kind === unit) && i + 1 < args.length) {
      kind = unit;
      time = args[++i]!;
    } else throw new ReplyError(SYNTAX);
  }
  // As Redis: every option is checked for syntax before the time's value is.
  if (kind === 'KEEPTTL') o.ttl = 'keep';
  else if (kind !== null) o.ttl = setExpireAt(kind, time!, 'set');
  return o;
}

const set: Command = {
  name: 'set', arity: -3, flags: ['write', 'denyoom'], keys: ONE_KEY,
  reads: (args) => (args.slice(3).some((a) => isWord(a, 'GET')) ? [args[1]!] : []),
  run({ store, out }, args) {
    const key = args[1]!;
    const value = args[2]!;
    const o = setOptions(args);
    store.checkRecord(key, value.length);
    const old = o.get ? store.get(key, true) : null; // read first: it may need a fetch
    const exists = o.get ? old !== null : o.nx || o.xx ? store.exists(key) : false;
    if ((o.nx && exists) || (o.xx && !exists)) {
      out.bulk(o.get ? old : null);
      return;
    }
    store.set(key, value, o.ttl);
    if (o.get) out.bulk(old);
    else out.simple('OK');
  },
};

const setnx: Command = {
  name: 'setnx', arity: 3, flags: ['write', 'denyoom', 'fast'], keys: ONE_KEY,
  run({ store, out }, args) {
    if (store.exists(args[1]!)) {
      out.integer(0);
      return;
    }
    store.set(args[1]!, args[2]!, 'none');
    out.integer(1);
  },
};

function setWithExpiry(name: string, unit: 'EX' | 'PX'): Command {
  return {
    name, arity: 4, flags: ['write', 'denyoom'], keys: ONE_KEY,
    run({ store, out }, args) {
      const at = setExpireAt(unit, args[2]!, name);
      store.set(args[1]!, args[3]!, at);
      out.simple('OK');
    },
  };
}

const getset: Command = {
  name: 'getset', arity: 3, flags: ['write', 'denyoom', 'fast'], keys: ONE_KEY, reads: firstKey,
  run({ store, out }, args) {
    store.checkRecord(args[1]!, args[2]!.length);
    const old = store.get(args[1]!, true);
    store.set(args[1]!, args[2]!, 'none');
    out.bulk(old);
  },
};

const getdel: Command = {
  name: 'getdel', arity: 2, flags: ['write', 'fast'], keys: ONE_KEY, reads: firstKey,
  run({ store, out }, args) {
    const v = store.get(args[1]!, true);
    if (v !== null) store.delete(args[1]!);
    out.bulk(v);
  },
};

const getex: Command = {
  name: 'getex', arity: -2, flags: ['write', 'fast'], keys: ONE_KEY, reads: firstKey,
  run({ store, out }, args) {
    // undefined: leave the expiry alone; null: PERSIST; else the option and its unchecked time.
    // As SET: one kind of option, repeatable, the last value winning.
    let change: [ExpireUnit, Buffer] | null | undefined;
    for (let i = 2; i < args.length; ++i) {
      const unit = expireUnit(args[i]!);
      if (isWord(args[i]!, 'PERSIST') && (change === undefined || change === null)) change = null;
      else if (unit !== null && (change === undefined || (change !== null && change[0] === unit)) && i + 1 < args.length) {
        change = [unit, args[++i]!];
      } else throw new ReplyError(SYNTAX);
    }
    const v = store.get(args[1]!);
    // Redis checks the time only once the key is found: a missing key answers nil whatever it is.
    if (v !== null && change !== undefined) {
      store.setExpireTime(args[1]!, change === null ? null : setExpireAt(change[0], change[1], 'getex'));
    }
    out.bulk(v);
  },
};

const mget: Command = {
  name: 'mget', arity: -2, flags: ['readonly', 'fast'], keys: [1, -1, 1], reads: allKeys,
  run({ store, out }, args) {
    const values = args.slice(1).map((k) => store.get(k)); // all reads before any output
    out.array(values.length);
    for (const v of values) out.bulk(v);
  },
};

function checkPairs(ctx: CommandContext, args: readonly Buffer[], name: string): void {
  if (args.length % 2 !== 1) throw new ReplyError(`ERR wrong number of arguments for '${name}' command`);
  for (let i = 1; i < args.length; i += 2) ctx.store.checkRecord(args[i]!, args[i + 1]!.length);
}

const mset: Command = {
  name: 'mset', arity: -3, flags: ['write', 'denyoom'], keys: [1, -1, 2],
  run(ctx, args) {
    checkPairs(ctx, args, 'mset');
    for (let i = 1; i < args.length; i += 2) ctx.store.set(args[i]!, args[i + 1]!, 'none');
    ctx.out.simple('OK');
  },
};

const msetnx: Command = {
  name: 'msetnx', arity: -3, flags: ['write', 'denyoom'], keys: [1, -1, 2],
  run(ctx, args) {
    checkPairs(ctx, args, 'msetnx');
    for (let i = 1; i < args.length; i += 2) {
      if (ctx.store.exists(args[i]!)) {
        ctx.out.integer(0);
        return;
      }
    }
    for (let i = 1; i < args.length; i += 2) ctx.store.set(args[i]!, args[i + 1]!, 'none');
    ctx.out.integer(1);
  },
};

const append: Command = {
  name: 'append', arity: 3, flags: ['write', 'denyoom', 'fast'], keys: ONE_KEY, reads: firstKey,
  run({ store, out }, args) {
    const old = store.get(args[1]!, true);
    const next = old === null ? args[2]! : Buffer.concat([old, args[2]!]);
    store.checkRecord(args[1]!, next.length);
    store.set(args[1]!, next, 'keep');
    out.integer(next.length);
  },
};

const strlen: Command = {
  name: 'strlen', arity: 2, flags: ['readonly', 'fast'], keys: ONE_KEY, reads: firstKey,
  run({ store, out }, args) {
    out.integer(store.get(args[1]!)?.length ?? 0);
  },
};

const getrange: Command = {
  name: 'getrange', arity: 4, flags: ['readonly'], keys: ONE_KEY, reads: firstKey,
  run({ store, out }, args) {
    let start = integerArg(args[2]!);
    let end = integerArg(args[3]!);
    const v = store.get(args[1]!);
    const n = v?.length ?? 0;
    if (v === null || n === 0 || (start < 0 && end < 0 && start > end)) {
      out.bulk(Buffer.alloc(0));
      return;
    }
    if (start < 0) start = Math.max(0, n + start);
    if (end < 0) end = Math.max(0, n + end);
    end = Math.min(end, n - 1);
    out.bulk(start > end ? Buffer.alloc(0) : v.subarray(start, end + 1));
  },
};

const setrange: Command = {
  name: 'setrange', arity: 4, flags: ['write', 'denyoom'], keys: ONE_KEY, reads: firstKey,
  run({ store, out }, args) {
    const offset = integerArg(args[2]!);
    if (offset < 0) throw new ReplyError('ERR offset is out of range');
    const patch = args[3]!;
    const old = store.get(args[1]!, true);
    if (patch.length === 0) {
      out.integer(old?.length ?? 0);
      return;
    }
    const length = Math.max(old?.length ?? 0, offset + patch.length);
    store.checkRecord(args[1]!, length);
    const next = Buffer.alloc(length);
    old?.copy(next);
    patch.copy(next, offset);
    store.set(args[1]!, next, 'keep');
    out.integer(length);
  },
};

/** Every string command. */
export const STRING_COMMANDS: readonly Command[] = [
  get, set, setnx, setWithExpiry('setex', 'EX'), setWithExpiry('psetex', 'PX'), getset, getdel, getex,
  mget, mset, msetnx, append, strlen, getrange, setrange,
];
