// remote-pages.ts — where flushed log pages live in remote memory: one region per `pagesPerRegion`
// pages, allocated on first use, addressed through Pd3Host (direct to the memory servers, or
// through the PD3 agent's rings).
import { Pd3Error, type AllocatedRegion, type Pd3Host } from 'pd3/host';

/** Where the region of index `index` comes from: a new allocation by default, or with a named log
 *  the tenant's region of that name (found again after a restart). */
export type RegionSource = (index: number, bytes: number) => Promise<AllocatedRegion & { created?: boolean }>;

/** Log pages in remote memory. */
export class RemotePages {
  readonly pageSize: number;
  readonly pagesPerRegion: number;
  private readonly host: Pd3Host;
  private readonly regions: number[] = []; // region id by region index; undefined until allocated
  private readonly allocating = new Map<number, Promise<void>>();

  /** Regions of a named log that already existed (opened again, not created). */
  regionsFound = 0;
  private readonly source: RegionSource;

  constructor(host: Pd3Host, pageSize: number, regionBytes: number, source?: RegionSource) {
    if (regionBytes % pageSize !== 0) throw new RangeError('the region size must be a multiple of the page size');
    this.host = host;
    this.source = source ?? ((_index, bytes) => host.allocate(bytes));
    this.pageSize = pageSize;
    this.pagesPerRegion = regionBytes / pageSize;
  }

  /** Regions allocated, or being allocated, so far. */
  get regionCount(): number {
    return this.allocating.size;
  }

  /** Whether the region holding `page` has been allocated. */
  hasRegionFor(page: number): boolean {
    return this.regions[Math.floor(page / this.pagesPerRegion)] !== undefined;
  }

  /** Allocates the region holding `page` (once; a failed allocation may be retried). */
  allocateRegionFor(page: number): Promise<void> {
    const index = Math.floor(page / this.pagesPerRegion);
    const pending = this.allocating.get(index);
    if (pending !== undefined) return pending;
    const p = this.source(index, this.pagesPerRegion * this.pageSize).then(
      ({ region, created }) => {
        if (created === false) this.regionsFound++;
        this.regions[index] = region;
      },
      (e: unknown) => {
        this.allocating.delete(index);
        throw e;
      },
    );
    this.allocating.set(index, p);
    this.kick();
    return p;
  }

  /** Writes a page's record bytes to its place; rejects if its region was never allocated. */
  writePage(page: number, bytes: Uint8Array): Promise<number> {
    const at = this.place(page * this.pageSize);
    return at instanceof Error ? Promise.reject(at) : this.host.write(at[0], at[1], bytes);
  }

  /** Reads `size` bytes at log `address` (a range inside one page); rejects if its region was
   *  never allocated. */
  read(address: number, size: number): Promise<Buffer> {
    const at = this.place(address);
    return at instanceof Error ? Promise.reject(at) : this.host.read(at[0], at[1], size);
  }

  /** Sends what was queued: direct-mode requests leave at the next poll, so a caller that waits on
   *  them polls at once instead of a turn of the event loop later. */
  kick(): void {
    try {
      this.host.poll();
    } catch (e) {
      // Closed at shutdown: the requests still waiting were rejected with PD3_E_CLOSED already.
      if (!(e instanceof Pd3Error && e.code === 'PD3_E_CLOSED')) throw e;
    }
  }

  private place(address: number): [region: number, offset: number] | RangeError {
    const regionBytes = this.pagesPerRegion * this.pageSize;
    const index = Math.floor(address / regionBytes);
    const region = this.regions[index];
    if (region === undefined) return new RangeError(`log address ${address}: its region was never allocated`);
    return [region, address - index * regionBytes];
  }
}
