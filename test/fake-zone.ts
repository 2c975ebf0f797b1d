// fake-zone.ts — a Loading Zone stand-in for tests of the apps' miss paths: items the test puts in,
// taken (removed) by checkAndReturn as the real zone's are; with the two host calls the page
// server's miss path asks about (an agent that is down after having served the segment).

/** Items by key; checkAndReturn copies one into `dest` and removes it. */
export class FakeZone {
  private readonly items = new Map<string, Buffer>();
  /** checkAndReturn calls so far. */
  looks = 0;

  put(key: Uint8Array | string, value: Buffer): void {
    this.items.set(Buffer.from(key).toString('hex'), value);
  }

  checkAndReturn(key: Uint8Array, dest: Uint8Array): number {
    this.looks++;
    const k = Buffer.from(key).toString('hex');
    const v = this.items.get(k);
    if (v === undefined) return 0;
    this.items.delete(k);
    v.copy(dest);
    return v.length;
  }

  agentAlive(): boolean {
    return false;
  }

  stats(): { agent_attaches: number } {
    return { agent_attaches: 1 };
  }
}
