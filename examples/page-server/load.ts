// load.ts — fills remote memory at start: every page's version-0 content, one record per slot,
// written with a bounded number of writes in flight.
import { pageContent } from './page-content.js';
import { encodePageRecord } from './page-record.js';
import type { RemotePages } from './remote-pages.js';

/** Writes pages 0 .. pages - 1 with `inflight` writes at a time. */
export async function loadPages(remote: RemotePages, pages: number, inflight = 64): Promise<void> {
  let next = 0;
  const writer = async (): Promise<void> => {
    while (next < pages) {
      const id = next++;
      await remote.writeRecord(id, encodePageRecord(id, pageContent(id, 0)));
    }
  };
  await Promise.all(Array.from({ length: Math.min(inflight, pages) }, writer));
}
