// server-view.ts — what server commands (INFO, CONFIG, COMMAND, FLUSHALL) see of the server.
import type { Command } from './command.js';
import type { KvStats } from './stats.js';

/** The server as its administrative commands see it. */
export interface ServerView {
  readonly stats: KvStats;
  /** Every command by lower-case name (COMMAND). */
  readonly commands: ReadonlyMap<string, Command>;
  /** INFO text for the lower-case section names asked (none: the default sections). */
  info(sections: readonly string[]): string;
  /** CONFIG GET's parameters and their values. */
  configParams(): ReadonlyArray<readonly [name: string, value: string]>;
  /** FLUSHALL: empties the keyspace. */
  flushAll(): void;
}
