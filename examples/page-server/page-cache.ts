// page-cache.ts — the page server's local cache: a fixed number of 4 KiB frames replaced by CLOCK
// (second chance), with a dirty bit per frame and a mark for pages a prefetcher brought in.
import { PAGE_SIZE } from './page-content.js';

// Frames per backing buffer: 64 MiB each, so large caches need no single huge allocation.
const FRAMES_PER_CHUNK = 16384;

/** A page pushed out to make room: its bytes (a copy) and whether it was written since it came in. */
export interface EvictedPage {
  id: number;
  page: Buffer;
  dirty: boolean;
}

/** How a page enters the cache. */
export interface InsertMode {
  dirty: boolean;
  /** Brought in by a prefetcher, not by a request (cleared by the first hit). */
  prefetched: boolean;
}

/** A CLOCK cache of pages by id. */
export class PageCache {
  readonly capacity: number;
  private readonly chunks: Buffer[] = [];
  private readonly ids: Float64Array; // page id in each frame, -1 when free
  private readonly referenced: Uint8Array;
  private readonly dirty: Uint8Array;
  private readonly prefetched: Uint8Array;
  private readonly frameOf = new Map<number, number>();
  private hand = 0;

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`cache capacity must be at least 1 page, got ${capacity}`);
    this.capacity = capacity;
    for (let left = capacity; left > 0; left -= FRAMES_PER_CHUNK) {
      this.chunks.push(Buffer.alloc(Math.min(left, FRAMES_PER_CHUNK) * PAGE_SIZE));
    }
    this.ids = new Float64Array(capacity).fill(-1);
    this.referenced = new Uint8Array(capacity);
    this.dirty = new Uint8Array(capacity);
    this.prefetched = new Uint8Array(capacity);
  }

  /** Pages cached. */
  get size(): number {
    return this.frameOf.size;
  }

  has(id: number): boolean {
    return this.frameOf.has(id);
  }

  /** The cached page (a view of its frame, valid until the next insert), or undefined; marks it
   *  recently used. */
  get(id: number): Buffer | undefined {
    const frame = this.frameOf.get(id);
    if (frame === undefined) return undefined;
    this.referenced[frame] = 1;
    return this.frame(frame);
  }

  /** True the first time this is asked of a cached page a prefetcher brought in (the mark is cleared). */
  takePrefetchMark(id: number): boolean {
    const frame = this.frameOf.get(id);
    if (frame === undefined || this.prefetched[frame] === 0) return false;
    this.prefetched[frame] = 0;
    return true;
  }

  /** Replaces a cached page's bytes and marks it dirty; false when it is not cached. */
  overwrite(id: number, page: Uint8Array): boolean {
    const frame = this.frameOf.get(id);
    if (frame === undefined) return false;
    this.frame(frame).set(page.subarray(0, PAGE_SIZE));
    this.referenced[frame] = 1;
    this.dirty[frame] = 1;
    this.prefetched[frame] = 0;
    return true;
  }

  /** Caches a page that is not cached yet; returns the page evicted for it, if any. */
  insert(id: number, page: Uint8Array, mode: InsertMode): EvictedPage | null {
    if (this.frameOf.has(id)) throw new Error(`page ${id} is already cached`);
    let evicted: EvictedPage | null = null;
    let frame: number;
    if (this.frameOf.size < this.capacity) {
      frame = this.frameOf.size; // frames fill in order and are never freed
    } else {
      frame = this.victim();
      const old = this.ids[frame]!;
      evicted = { id: old, page: Buffer.from(this.frame(frame)), dirty: this.dirty[frame] === 1 };
      this.frameOf.delete(old);
    }
    this.frame(frame).set(page.subarray(0, PAGE_SIZE));
    this.ids[frame] = id;
    this.frameOf.set(id, frame);
    this.referenced[frame] = mode.prefetched ? 0 : 1; // a prefetched page earns its second chance by a hit
    this.dirty[frame] = mode.dirty ? 1 : 0;
    this.prefetched[frame] = mode.prefetched ? 1 : 0;
    return evicted;
  }

  // The hand sweeps frames, clearing reference bits, until it finds one without.
  private victim(): number {
    for (;;) {
      const frame = this.hand;
      this.hand = (this.hand + 1) % this.capacity;
      if (this.referenced[frame] === 0) return frame;
      this.referenced[frame] = 0;
    }
  }

  private frame(frame: number): Buffer {
    const chunk = this.chunks[Math.floor(frame / FRAMES_PER_CHUNK)]!;
    const at = (frame % FRAMES_PER_CHUNK) * PAGE_SIZE;
    return chunk.subarray(at, at + PAGE_SIZE);
  }
}
