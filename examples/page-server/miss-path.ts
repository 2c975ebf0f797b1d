// miss-path.ts — how a mode serves a page that is neither in the local cache nor waiting in the
// write-back: the interface every remote mode implements.

/** The out-of-core path of one mode. */
export interface MissPath {
  /** The page without a remote read (a Loading Zone item), or undefined. Asked only about pages
   *  that are neither cached nor waiting to be written back. */
  immediate(id: number): Buffer | undefined;
  /** Reads the page from remote memory. */
  fetch(id: number): Promise<Buffer>;
  /** Mode pd3: waits a bounded time for the page's Loading Zone item (the agent's prefetch is
   *  usually in flight when the app misses); undefined if it did not come. Absent: no wait. */
  awaitZone?(id: number): Promise<Buffer | undefined>;
}
