// page-store.ts — what the gRPC handlers see of a mode: pages by id, read and written.

/** The pages of one server (ids are checked by the caller). */
export interface PageStore {
  /** The page's bytes, owned by the caller: at once on a hit, a promise when it must be fetched. */
  get(id: number): Buffer | Promise<Buffer>;
  /** Replaces the page (PAGE_SIZE bytes, copied). */
  put(id: number, page: Uint8Array): void;
  /** Waits for writes in flight (bounded by `ms`) and stops. */
  close(ms: number): Promise<void>;
}
