// remote-pages.ts — the pages in remote memory: one slot per page in regions allocated at start,
// read and written through Pd3Host (directly to the memory servers, or through the PD3 agent).
import { Pd3Error, type Pd3Host } from 'pd3/host';
import { pageOfRecord, recordLength, SLOT_BYTES } from './page-record.js';

// Largest region asked for: well below the memory server's 4 GiB - 4 KiB limit, so pages spread
// over several regions (and servers) when there are many.
const REGION_BYTES_MAX = 1 << 30;
// How long a request refused for a full ring (PD3_E_AGAIN) is retried before it fails.
const BACK_PRESSURE_DEADLINE_MS = 5000;

/** A read whose record does not hold the page asked for: remote memory lost or never had it. */
export class PageRecordError extends Error {
  override readonly name = 'PageRecordError';
}

/** What the cache and the miss paths need of remote memory (RemotePages; tests use a fake). */
export interface PageRemote {
  /** Reads page `id` from its slot. */
  readPage(id: number): Promise<Buffer>;
  /** Writes page `id`'s record to its slot; `issued` runs right after each attempt was handed over. */
  writeRecord(id: number, record: Uint8Array, issued?: () => void): Promise<void>;
  /** Sends what is queued now. */
  kick(): void;
}

/** Page slots in remote memory. */
export class RemotePages implements PageRemote {
  readonly pagesPerRegion: number;
  private readonly regions: number[] = [];

  constructor(
    readonly host: Pd3Host,
    readonly pages: number,
  ) {
    this.pagesPerRegion = Math.min(pages, Math.floor(REGION_BYTES_MAX / SLOT_BYTES));
  }

  /** Allocates every region (once, before any read or write). */
  async allocate(): Promise<void> {
    const count = Math.ceil(this.pages / this.pagesPerRegion);
    for (let i = this.regions.length; i < count; i++) {
      const pagesHere = Math.min(this.pagesPerRegion, this.pages - i * this.pagesPerRegion);
      const granted = await this.retry(() => this.host.allocate(pagesHere * SLOT_BYTES));
      this.regions.push(granted.region);
    }
  }

  /** Reads page `id` (its whole record, so the agent sees the key in the answer: Table 2). */
  async readPage(id: number): Promise<Buffer> {
    const [region, offset] = this.place(id);
    const record = await this.retry(() => this.host.read(region, offset, recordLength(id)));
    const page = pageOfRecord(id, record);
    if (page === null) throw new PageRecordError(`page ${id}: remote memory does not hold its record`);
    return page;
  }

  /** Writes page `id`'s record (encodePageRecord) to its slot; `issued` runs right after each
   *  attempt has been handed to the host library. */
  async writeRecord(id: number, record: Uint8Array, issued?: () => void): Promise<void> {
    const [region, offset] = this.place(id);
    await this.retry(() => {
      const written = this.host.write(region, offset, record);
      issued?.();
      return written;
    });
  }

  /** Sends what is queued now: direct-mode requests otherwise leave at the pump's next poll. */
  kick(): void {
    this.host.poll();
  }

  private place(id: number): [region: number, offset: number] {
    const index = Math.floor(id / this.pagesPerRegion);
    const region = this.regions[index];
    if (region === undefined) throw new RangeError(`page ${id}: no region (not allocated, or id out of range)`);
    return [region, (id - index * this.pagesPerRegion) * SLOT_BYTES];
  }

  /** Runs `issue` again while the request ring is full, completing responses in between. */
  private async retry<T>(issue: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + BACK_PRESSURE_DEADLINE_MS;
    for (;;) {
      try {
        return await issue();
      } catch (e) {
        if (!(e instanceof Pd3Error) || e.code !== 'PD3_E_AGAIN' || Date.now() > deadline) throw e;
        this.host.poll();
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
  }
}
