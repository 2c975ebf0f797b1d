// verify-model.ts — the client's model of the server's pages for --verify: the version each page must
// hold, new versions for writes, and one operation per page at a time so the expected version is
// always exact.
import { pageContent, pageStamp } from './page-content.js';

/** Versions written per page (every page starts at version 0, as the server loads it). */
export class VerifyModel {
  private readonly versions = new Map<number, number>();
  private readonly busy = new Map<number, Promise<void>>();
  private lastVersion = 0;

  /** A version never written before by this model. */
  nextVersion(): number {
    return ++this.lastVersion;
  }

  /** The version page `id` must hold now. */
  expected(id: number): number {
    return this.versions.get(id) ?? 0;
  }

  /** Records an acknowledged write. */
  written(id: number, version: number): void {
    this.versions.set(id, version);
  }

  /** Why `page` is not what page `id` must hold now, or null when it is. */
  check(id: number, page: Uint8Array): string | null {
    const want = this.expected(id);
    const stamp = pageStamp(page);
    if (stamp === null) return `page ${id}: ${page.length} bytes without a valid stamp (want version ${want})`;
    if (stamp.id !== id) return `page ${id}: holds page ${stamp.id} version ${stamp.version}`;
    if (stamp.version !== want) return `page ${id}: version ${stamp.version}, want ${want}${stamp.version < want ? ' (stale)' : ''}`;
    if (!pageContent(id, want).equals(page)) return `page ${id}: version ${want} stamp but other bytes`;
    return null;
  }

  /** Runs `op` once no other operation on page `id` is running. */
  async exclusive<T>(id: number, op: () => Promise<T>): Promise<T> {
    for (let ahead = this.busy.get(id); ahead !== undefined; ahead = this.busy.get(id)) await ahead;
    let release!: () => void;
    this.busy.set(id, new Promise<void>((resolve) => (release = resolve)));
    try {
      return await op();
    } finally {
      this.busy.delete(id);
      release();
    }
  }
}
