// argv.ts — splits a command line into --flag values, --help and --version, refusing anything else.
import { didYouMean } from './suggest.js';
import { UsageError } from './usage-error.js';

/** A command line, split. */
export interface ParsedArgv {
  help: boolean;
  version: boolean;
  /** Flag name (without "--") → its text, for every flag given. */
  values: Map<string, string>;
}

/** Parses `--flag VALUE`, `--flag=VALUE`, `--help`/`-h` and `--version`/`-V`. Every flag in
 *  `known` takes a value; each may be given once. Throws UsageError naming the offending argument. */
export function parseArgv(argv: readonly string[], known: ReadonlySet<string>): ParsedArgv {
  const out: ParsedArgv = { help: false, version: false, values: new Map() };
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') {
      out.help = true;
      continue;
    }
    if (arg === '--version' || arg === '-V') {
      out.version = true;
      continue;
    }
    if (!arg.startsWith('--') || arg === '--') {
      throw new UsageError(`unexpected argument "${arg}" (every setting is a --flag)`);
    }
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    if (name === 'help' || name === 'version') throw new UsageError(`--${name} takes no value`);
    if (!known.has(name)) {
      const all = [...known, 'help', 'version'];
      throw new UsageError(`unknown flag --${name}${didYouMean(name, all, (c) => `--${c}`)}`);
    }
    let value: string;
    if (eq >= 0) {
      value = arg.slice(eq + 1);
    } else {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) throw new UsageError(`--${name} needs a value`);
      value = next;
      ++i;
    }
    if (out.values.has(name)) throw new UsageError(`--${name} is given more than once`);
    out.values.set(name, value);
  }
  return out;
}
