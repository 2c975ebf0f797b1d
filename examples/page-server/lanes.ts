// lanes.ts — the application threads of a blocking mode, emulated on the event loop: each request
// holds a lane from the moment it starts until it is answered, so with N lanes at most N requests are
// served at once and a remote read stalls its lane, as a synchronous read stalls a thread.

/** N lanes; requests beyond them wait in arrival order. */
export class Lanes {
  private busy = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly count: number) {
    if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`lanes must be at least 1, got ${count}`);
  }

  /** Requests waiting for a lane. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Runs `task` on a free lane (now, or after the requests ahead of it) and frees the lane when it
   *  settles. */
  run<T>(task: () => T | Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = (): void => {
        this.busy++;
        let result: Promise<T>;
        try {
          result = Promise.resolve(task());
        } catch (e) {
          result = Promise.reject(e);
        }
        result.then(resolve, reject).finally(() => this.release());
      };
      if (this.busy < this.count) start();
      else this.waiting.push(start);
    });
  }

  private release(): void {
    this.busy--;
    const next = this.waiting.shift();
    if (next !== undefined) next();
  }
}
