// local-store.ts — mode local: every page in local memory, the baseline without disaggregation.
import { PAGE_SIZE, pageContent } from './page-content.js';
import type { PageStore } from './page-store.js';
import type { PageServerStats } from './stats.js';

// Pages per backing buffer (64 MiB), so no single allocation is huge.
const PAGES_PER_CHUNK = 16384;

/** All pages in memory. */
export class LocalPageStore implements PageStore {
  private readonly chunks: Buffer[] = [];

  /** Fills every page with its version-0 content. */
  constructor(
    pages: number,
    private readonly stats: PageServerStats,
  ) {
    for (let first = 0; first < pages; first += PAGES_PER_CHUNK) {
      const count = Math.min(PAGES_PER_CHUNK, pages - first);
      const chunk = Buffer.allocUnsafe(count * PAGE_SIZE);
      for (let i = 0; i < count; i++) pageContent(first + i, 0).copy(chunk, i * PAGE_SIZE);
      this.chunks.push(chunk);
    }
  }

  get(id: number): Buffer {
    this.stats.localHits++;
    return Buffer.from(this.page(id));
  }

  put(id: number, page: Uint8Array): void {
    this.page(id).set(page.subarray(0, PAGE_SIZE));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private page(id: number): Buffer {
    const chunk = this.chunks[Math.floor(id / PAGES_PER_CHUNK)];
    if (chunk === undefined) throw new RangeError(`page ${id} does not exist`);
    const at = (id % PAGES_PER_CHUNK) * PAGE_SIZE;
    return chunk.subarray(at, at + PAGE_SIZE);
  }
}
