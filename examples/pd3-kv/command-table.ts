// command-table.ts — every command pd3-kv knows, by lower-case name.
import type { Command } from './command.js';
import { COUNTER_COMMANDS } from './commands-counters.js';
import { KEY_COMMANDS } from './commands-keys.js';
import { RENAME_COMMANDS } from './commands-rename.js';
import { SERVER_COMMANDS } from './commands-server.js';
import { STRING_COMMANDS } from './commands-strings.js';
import { TRANSACTION_COMMANDS } from './commands-transactions.js';

/** Builds the table (a fresh Map each call). */
export function commandTable(): Map<string, Command> {
  const all = [...STRING_COMMANDS, ...COUNTER_COMMANDS, ...KEY_COMMANDS, ...RENAME_COMMANDS, ...SERVER_COMMANDS, ...TRANSACTION_COMMANDS];
  return new Map(all.map((c) => [c.name, c]));
}

/** Whether `args` (name included) has a number of words `cmd` accepts. */
export function arityOk(cmd: Command, words: number): boolean {
  return cmd.arity > 0 ? words === cmd.arity : words >= -cmd.arity;
}
