// periodic-check.ts — an async check run over and over with a pause between the end of one pass and
// the start of the next (passes never overlap), until close(): the loop of the tenant reaper, the
// migrator and the move janitor.

/** Runs `check` every `intervalMs` after the previous pass ended. */
export class PeriodicCheck {
  private timer: NodeJS.Timeout | null = null;
  private pass: Promise<void> | null = null;

  /** An error `check` lets escape ends only its pass: it goes to `onError`, and the loop goes on. */
  constructor(
    private readonly intervalMs: number,
    private readonly check: () => Promise<void>,
    private readonly onError: (e: Error) => void,
  ) {}

  /** Schedules the first pass one interval from now. */
  start(): void {
    const tick = (): void => {
      this.pass = this.check()
        .catch((e: unknown) => this.onError(e instanceof Error ? e : new Error(String(e))))
        .finally(() => {
          if (this.timer !== null) this.timer = setTimeout(tick, this.intervalMs);
        });
    };
    this.timer = setTimeout(tick, this.intervalMs);
  }

  /** Stops the loop; a pass under way finishes first. */
  async close(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.pass;
  }
}
