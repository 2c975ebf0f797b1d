// bench-command.ts — what every benchmark does with its command line: --help prints the usage and
// exits 0; a bad flag prints what is wrong and the usage, and exits 2.

/** The `help` flag of a benchmark's util.parseArgs options. */
export const HELP_OPTION = { help: { type: 'boolean', default: false } } as const;

/** Runs `parse` (util.parseArgs and any checks; it throws to refuse a flag). On a refusal prints
 *  "NAME: why" and `usage` and exits 2; when the parsed values ask for help, prints `usage` and
 *  exits 0; else returns them. */
export function parseBenchCommand<T extends { help?: boolean }>(name: string, usage: string, parse: () => T): T {
  let values: T;
  try {
    values = parse();
  } catch (e) {
    console.error(`${name}: ${(e as Error).message}\n${usage}`);
    process.exit(2);
  }
  if (values.help === true) {
    console.log(usage);
    process.exit(0);
  }
  return values;
}

/** `text`, a flag's value, as a whole number from `min` to `max`; throws "FLAG must be an integer
 *  from MIN to MAX, got 'TEXT'" otherwise (for parseBenchCommand to print). */
export function integerFlag(flag: string, text: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max)
    throw new Error(`${flag} must be an integer from ${min} to ${max}, got '${text}'`);
  return Number(text);
}
