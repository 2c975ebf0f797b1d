// sync-miss-path.ts — modes sync, leap and pd3-noprefetch: each miss is one remote read, sent at once
// (directly to the memory servers, or through the agent's rings).
import type { MissPath } from './miss-path.js';
import type { PageRemote } from './remote-pages.js';

/** One read per miss, issued and sent immediately. */
export class SyncMissPath implements MissPath {
  constructor(private readonly remote: PageRemote) {}

  immediate(): undefined {
    return undefined;
  }

  fetch(id: number): Promise<Buffer> {
    const read = this.remote.readPage(id);
    this.remote.kick();
    return read;
  }
}
