// commands-counters.ts — read-modify-write on numbers: INCR, INCRBY, DECR, DECRBY (64-bit signed
// integers, overflow refused) and INCRBYFLOAT. The key keeps its expiry, as in Redis.
import { NOT_INTEGER } from './args.js';
import type { Command } from './command.js';
import { addLongDouble, formatLongDouble, parseLongDouble, type LongDouble } from './long-double.js';
import { inInt64, parseInt64 } from './numbers.js';
import { ReplyError } from './reply-error.js';

const ONE_KEY = [1, 1, 1] as const;
const ZERO: LongDouble = { neg: false, m: 0n, e: 0 };
const firstKey = (args: readonly Buffer[]): Buffer[] => [args[1]!];

function counter(name: string, arity: number, delta: (args: readonly Buffer[]) => bigint): Command {
  return {
    name, arity, flags: ['write', 'denyoom', 'fast'], keys: ONE_KEY, reads: firstKey,
    run({ store, out }, args) {
      const by = delta(args);
      const old = store.get(args[1]!, true);
      const current = old === null ? 0n : parseInt64(old);
      if (current === null) throw new ReplyError(NOT_INTEGER);
      const next = current + by;
      if (!inInt64(next)) throw new ReplyError('ERR increment or decrement would overflow');
      store.set(args[1]!, Buffer.from(next.toString(), 'latin1'), 'keep');
      out.integer(next);
    },
  };
}

function deltaArg(arg: Buffer, negate: boolean): bigint {
  const v = parseInt64(arg);
  if (v === null) throw new ReplyError(NOT_INTEGER);
  if (negate && v === -(2n ** 63n)) throw new ReplyError('ERR decrement would overflow');
  return negate ? -v : v;
}

// Redis adds in long double and prints "%.17Lf" trimmed: long-double.ts emulates both exactly.
const incrbyfloat: Command = {
  name: 'incrbyfloat', arity: 3, flags: ['write', 'denyoom', 'fast'], keys: ONE_KEY, reads: firstKey,
  run({ store, out }, args) {
    const old = store.get(args[1]!, true);
    const current = old === null ? ZERO : parseLongDouble(old.toString('latin1'));
    const by = parseLongDouble(args[2]!.toString('latin1'));
    if (current === null || by === null) throw new ReplyError('ERR value is not a valid float');
    const next = addLongDouble(current, by);
    if (next === null || 'inf' in next) throw new ReplyError('ERR increment would produce NaN or Infinity');
    const text = Buffer.from(formatLongDouble(next), 'latin1');
    store.checkRecord(args[1]!, text.length);
    store.set(args[1]!, text, 'keep');
    out.bulk(text);
  },
};

/** Every counter command. */
export const COUNTER_COMMANDS: readonly Command[] = [
  counter('incr', 2, () => 1n),
  counter('decr', 2, () => -1n),
  counter('incrby', 3, (args) => deltaArg(args[2]!, false)),
  counter('decrby', 3, (args) => deltaArg(args[2]!, true)),
  incrbyfloat,
];
