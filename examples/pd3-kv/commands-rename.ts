// commands-rename.ts — moving and copying string keys: RENAME, RENAMENX, COPY (DB 0 only). In the
// hybrid log a rename is a new record of the value under the new key plus a tombstone of the old
// one (records never change); the expiry time goes with the value, as in Redis.
import { integerArg, isWord } from './args.js';
import type { Command, CommandContext } from './command.js';
import { ReplyError } from './reply-error.js';

const TWO_KEYS = [1, 2, 1] as const;
const source = (args: readonly Buffer[]): Buffer[] => [args[1]!];

// Writes src's value and expiry under dst (replacing dst). The value is read first: it may need a
// fetch, and a rerun must find nothing changed.
function copyKey({ store }: CommandContext, src: Buffer, dst: Buffer, value: Buffer): void {
  const at = store.expireTime(src);
  store.checkRecord(dst, value.length);
  store.set(dst, value, typeof at === 'bigint' ? at : 'none');
}

function rename(name: string, nx: boolean): Command {
  return {
    name, arity: 3, flags: ['write'], keys: TWO_KEYS, reads: source,
    run(ctx, args) {
      const [src, dst] = [args[1]!, args[2]!];
      const value = ctx.store.get(src, true);
      if (value === null) throw new ReplyError('ERR no such key');
      if (src.equals(dst)) {
        if (nx) ctx.out.integer(0);
        else ctx.out.simple('OK');
        return;
      }
      if (nx && ctx.store.exists(dst)) {
        ctx.out.integer(0);
        return;
      }
      copyKey(ctx, src, dst, value);
      ctx.store.delete(src);
      if (nx) ctx.out.integer(1);
      else ctx.out.simple('OK');
    },
  };
}

const copy: Command = {
  name: 'copy', arity: -3, flags: ['write', 'denyoom'], keys: TWO_KEYS, reads: source,
  run(ctx, args) {
    const [src, dst] = [args[1]!, args[2]!];
    let replace = false;
    let db = 0;
    for (let i = 3; i < args.length; ++i) {
      if (isWord(args[i]!, 'REPLACE')) replace = true;
      else if (isWord(args[i]!, 'DB') && i + 1 < args.length) db = integerArg(args[++i]!);
      else throw new ReplyError('ERR syntax error');
    }
    if (db !== 0) throw new ReplyError('ERR DB index is out of range'); // one database, as SELECT
    if (src.equals(dst)) throw new ReplyError('ERR source and destination objects are the same');
    const value = ctx.store.get(src, true);
    if (value === null || (!replace && ctx.store.exists(dst))) {
      ctx.out.integer(0);
      return;
    }
    copyKey(ctx, src, dst, value);
    ctx.out.integer(1);
  },
};

/** RENAME, RENAMENX, COPY. */
export const RENAME_COMMANDS: readonly Command[] = [rename('rename', false), rename('renamenx', true), copy];
