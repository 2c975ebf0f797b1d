// commands-server.ts — connection and server commands: PING, ECHO, QUIT, SELECT (0 only), HELLO
// (protocol 2), CLIENT (SETNAME, GETNAME, ID, SETINFO), TIME, DBSIZE, FLUSHALL, FLUSHDB, INFO,
// CONFIG (GET, RESETSTAT), COMMAND (COUNT, INFO, LIST, DOCS).
import { integerArg, isWord } from './args.js';
import type { Command, CommandContext } from './command.js';
import { ReplyError } from './reply-error.js';

const NO_KEYS = [0, 0, 0] as const;
/** The Redis version pd3-kv answers like (for clients that check it). */
export const REDIS_COMPAT_VERSION = '7.0.0';

function arityError(name: string): ReplyError {
  return new ReplyError(`ERR wrong number of arguments for '${name}' command`);
}

const ping: Command = {
  name: 'ping', arity: -1, flags: ['fast', 'stale'], keys: NO_KEYS,
  run({ out }, args) {
    if (args.length > 2) throw arityError('ping');
    if (args.length === 2) out.bulk(args[1]!);
    else out.simple('PONG');
  },
};

const echo: Command = {
  name: 'echo', arity: 2, flags: ['fast'], keys: NO_KEYS,
  run({ out }, args) {
    out.bulk(args[1]!);
  },
};

const quit: Command = {
  name: 'quit', arity: -1, flags: ['fast'], keys: NO_KEYS,
  run({ out, session }) {
    session.closing = true;
    out.simple('OK');
  },
};

const select: Command = {
  name: 'select', arity: 2, flags: ['fast'], keys: NO_KEYS,
  run({ out }, args) {
    if (integerArg(args[1]!) !== 0) throw new ReplyError('ERR DB index is out of range');
    out.simple('OK');
  },
};

const hello: Command = {
  name: 'hello', arity: -1, flags: ['fast'], keys: NO_KEYS,
  run({ out, session }, args) {
    let i = 1;
    if (args.length > 1) {
      const proto = integerArg(args[1]!);
      if (proto !== 2) throw new ReplyError('NOPROTO sorry, this protocol version is not supported');
      i = 2;
    }
    for (; i < args.length; ++i) {
      if (isWord(args[i]!, 'SETNAME') && i + 1 < args.length) session.name = args[++i]!.toString('latin1');
      else if (isWord(args[i]!, 'AUTH')) throw new ReplyError('ERR AUTH is not supported: pd3-kv has no passwords');
      else throw new ReplyError(`ERR Syntax error in HELLO option '${args[i]!.toString('latin1')}'`);
    }
    out.array(14);
    for (const [k, v] of [['server', 'redis'], ['version', REDIS_COMPAT_VERSION]] as const) {
      out.bulkText(k);
      out.bulkText(v);
    }
    out.bulkText('proto');
    out.integer(2);
    out.bulkText('id');
    out.integer(session.id);
    for (const [k, v] of [['mode', 'standalone'], ['role', 'master']] as const) {
      out.bulkText(k);
      out.bulkText(v);
    }
    out.bulkText('modules');
    out.array(0);
  },
};

const client: Command = {
  name: 'client', arity: -2, flags: ['admin'], keys: NO_KEYS,
  run({ out, session }, args) {
    const sub = args[1]!;
    if (isWord(sub, 'SETNAME') && args.length === 3) {
      const name = args[2]!.toString('latin1');
      if (/[\s]/.test(name)) throw new ReplyError('ERR Client names cannot contain spaces, newlines or special characters.');
      session.name = name;
      out.simple('OK');
    } else if (isWord(sub, 'GETNAME') && args.length === 2) {
      out.bulk(session.name === '' ? null : Buffer.from(session.name, 'latin1'));
    } else if (isWord(sub, 'ID') && args.length === 2) {
      out.integer(session.id);
    } else if (isWord(sub, 'SETINFO') && args.length === 4) {
      out.simple('OK'); // library name and version: nothing to keep them for
    } else {
      throw new ReplyError(`ERR unknown subcommand or wrong number of arguments for CLIENT ${sub.toString('latin1')}`);
    }
  },
};

const time: Command = {
  name: 'time', arity: 1, flags: ['fast'], keys: NO_KEYS,
  run({ out }) {
    const us = BigInt(Date.now()) * 1000n;
    out.array(2);
    out.bulkText(String(us / 1_000_000n));
    out.bulkText(String(us % 1_000_000n));
  },
};

const dbsize: Command = {
  name: 'dbsize', arity: 1, flags: ['readonly', 'fast'], keys: NO_KEYS,
  run({ out, store }) {
    out.integer(store.size);
  },
};

function flush(name: string): Command {
  return {
    name, arity: -1, flags: ['write'], keys: NO_KEYS,
    run({ out, server }, args) {
      if (args.length > 2 || (args.length === 2 && !isWord(args[1]!, 'SYNC') && !isWord(args[1]!, 'ASYNC'))) {
        throw new ReplyError('ERR syntax error');
      }
      server.flushAll();
      out.simple('OK');
    },
  };
}

const info: Command = {
  name: 'info', arity: -1, flags: ['stale'], keys: NO_KEYS,
  run({ out, server }, args) {
    out.bulkText(server.info(args.slice(1).map((a) => a.toString('latin1').toLowerCase())));
  },
};

/** Whether `text` matches the glob `pattern` (* and ?), both lower case. */
function globMatch(pattern: string, text: string): boolean {
  const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
  return re.test(text);
}

const config: Command = {
  name: 'config', arity: -2, flags: ['admin'], keys: NO_KEYS,
  run({ out, server }, args) {
    const sub = args[1]!;
    if (isWord(sub, 'GET') && args.length >= 3) {
      const patterns = args.slice(2).map((a) => a.toString('latin1').toLowerCase());
      const found = server.configParams().filter(([name]) => patterns.some((p) => globMatch(p, name)));
      out.array(found.length * 2);
      for (const [name, value] of found) {
        out.bulkText(name);
        out.bulkText(value);
      }
    } else if (isWord(sub, 'RESETSTAT') && args.length === 2) {
      server.stats.reset();
      out.simple('OK');
    } else if (isWord(sub, 'SET')) {
      throw new ReplyError('ERR CONFIG SET is not supported: pd3-kv is configured by its command line');
    } else {
      throw new ReplyError(`ERR unknown subcommand or wrong number of arguments for CONFIG ${sub.toString('latin1')}`);
    }
  },
};

function describe(ctx: CommandContext, cmd: Command): void {
  ctx.out.array(6);
  ctx.out.bulkText(cmd.name);
  ctx.out.integer(cmd.arity);
  ctx.out.array(cmd.flags.length);
  for (const f of cmd.flags) ctx.out.simple(f);
  for (const k of cmd.keys) ctx.out.integer(k);
}

const command: Command = {
  name: 'command', arity: -1, flags: ['stale'], keys: NO_KEYS,
  run(ctx, args) {
    const all = ctx.server.commands;
    if (args.length === 1) {
      ctx.out.array(all.size);
      for (const cmd of all.values()) describe(ctx, cmd);
      return;
    }
    const sub = args[1]!;
    if (isWord(sub, 'COUNT') && args.length === 2) {
      ctx.out.integer(all.size);
    } else if (isWord(sub, 'LIST') && args.length === 2) {
      ctx.out.array(all.size);
      for (const name of all.keys()) ctx.out.bulkText(name);
    } else if (isWord(sub, 'INFO')) {
      ctx.out.array(args.length - 2);
      for (const a of args.slice(2)) {
        const cmd = all.get(a.toString('latin1').toLowerCase());
        if (cmd === undefined) ctx.out.array(-1);
        else describe(ctx, cmd);
      }
    } else if (isWord(sub, 'DOCS')) {
      ctx.out.array(0); // no documentation strings to give
    } else {
      throw new ReplyError(`ERR unknown subcommand '${sub.toString('latin1')}'. Try COMMAND HELP.`);
    }
  },
};

/** Every connection and server command. */
export const SERVER_COMMANDS: readonly Command[] = [
  ping, echo, quit, select, hello, client, time, dbsize, flush('flushall'), flush('flushdb'), info, config, command,
];
