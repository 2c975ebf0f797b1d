// expiry.ts — expiry times of the keys that have one, beside the index (whose slot carries a flag,
// so keys without a TTL never look here), and the periodic sampling that deletes expired keys.

/** Keys (as latin1 strings, one char per byte) → expiry time in ms since the epoch, a signed 64-bit
 *  integer as in Redis (times beyond 2^53 ms must read back exactly). */
export class Expiry {
  private readonly at = new Map<string, bigint>();
  private cursor: Iterator<[string, bigint]> | null = null;

  /** Keys with an expiry time. */
  get size(): number {
    return this.at.size;
  }

  get(key: string): bigint | undefined {
    return this.at.get(key);
  }

  set(key: string, atMs: bigint): void {
    this.at.set(key, atMs);
  }

  delete(key: string): void {
    this.at.delete(key);
  }

  clear(): void {
    this.at.clear();
    this.cursor = null;
  }

  /** Looks at up to `budget` keys, continuing where the last call stopped, and returns those whose
   *  time has come (the caller deletes them). */
  expiredSample(now: number, budget: number): string[] {
    const out: string[] = [];
    for (let i = 0; i < budget; ++i) {
      this.cursor ??= this.at.entries();
      const next = this.cursor.next();
      if (next.done === true) {
        this.cursor = null;
        break;
      }
      const [key, when] = next.value;
      if (when <= now) out.push(key);
    }
    return out;
  }
}
