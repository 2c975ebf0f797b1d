// usage-error.ts — UsageError: a bad flag, config file or setting; the CLIs print it and exit 2.

/** A refused command line or config; the message names the flag or key and the problem. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Exit status of a usage or config error (as most Unix tools use). */
export const EXIT_USAGE = 2;
/** Exit status of a failure to start or a crash. */
export const EXIT_FAILURE = 1;
