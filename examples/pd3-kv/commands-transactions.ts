// commands-transactions.ts — MULTI, EXEC, DISCARD (through the executor, which queues and runs the
// commands), WATCH (refused: no optimistic locking) and UNWATCH.
import type { Command } from './command.js';
import { ReplyError } from './reply-error.js';

const NO_KEYS = [0, 0, 0] as const;

/** Commands that act on the transaction itself: never queued by MULTI. */
export const TRANSACTION_CONTROL: ReadonlySet<string> = new Set(['multi', 'exec', 'discard', 'watch', 'quit']);

/** Every transaction command. */
export const TRANSACTION_COMMANDS: readonly Command[] = [
  { name: 'multi', arity: 1, flags: ['fast'], keys: NO_KEYS, run: (ctx) => ctx.transactions.multi() },
  { name: 'exec', arity: 1, flags: [], keys: NO_KEYS, run: (ctx) => ctx.transactions.exec() },
  { name: 'discard', arity: 1, flags: ['fast'], keys: NO_KEYS, run: (ctx) => ctx.transactions.discard() },
  {
    name: 'watch', arity: -2, flags: ['fast'], keys: [1, -1, 1],
    run(ctx) {
      if (ctx.session.queued !== null) throw new ReplyError('ERR WATCH inside MULTI is not allowed');
      throw new ReplyError('ERR WATCH is not supported by pd3-kv (MULTI/EXEC without optimistic locking)');
    },
  },
  { name: 'unwatch', arity: 1, flags: ['fast'], keys: NO_KEYS, run: (ctx) => ctx.out.simple('OK') },
];
