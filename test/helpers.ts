// helpers.ts — shared by the TS tests: unique segment names and a model agent that serves
// requests from local memory (the test peer standing in for the Transfer Engine + memory server).
import { AgentSession } from '../dist/dpu/index.js';
import { constants as C } from '../dist/host/index.js';

let counter = 0;
/** A segment name unique to this process and call. */
export function uniqueName(tag: string): string {
  return `pd3-vt-${tag}-${process.pid}-${counter++}`;
}

const E = C.status;

/** Serves READ/WRITE/ALLOCATE/DEALLOCATE from in-memory regions, bounds-checked like the memory server. */
export class ModelAgent {
  readonly session: AgentSession;
  readonly regions = new Map<number, Buffer>();
  private nextRegion = 1;
  private timer: NodeJS.Immediate | null = null;
  private backlog: Array<[number, number, Uint8Array | number | undefined]> = [];
  served = 0;

  constructor(name: string) {
    this.session = AgentSession.attach(name);
  }

  /** Serves everything published so far; returns how many requests it answered. */
  serveOnce(): number {
    this.session.beat();
    this.flushBacklog();
    const reqs = this.session.takeRequests(4096);
    for (const r of reqs) this.answer(r.opId, ...this.execute(r));
    this.served += reqs.length;
    return reqs.length;
  }

  /** Keeps serving on the event loop until stop(). */
  start(): this {
    const loop = (): void => {
      this.serveOnce();
      this.timer = setImmediate(loop);
    };
    this.timer = setImmediate(loop);
    return this;
  }

  stop(): void {
    if (this.timer) clearImmediate(this.timer);
    this.timer = null;
  }

  close(): void {
    this.stop();
    this.session.close();
  }

  private answer(opId: number, status: number, data?: Uint8Array | number): void {
    if (this.backlog.length > 0 || this.session.respond(opId, status, data) === E.PD3_E_AGAIN) {
      this.backlog.push([opId, status, data]); // response ring full: keep order, retry next pass
    }
  }

  private flushBacklog(): void {
    while (this.backlog.length > 0) {
      const [opId, status, data] = this.backlog[0]!;
      if (this.session.respond(opId, status, data) === E.PD3_E_AGAIN) return;
      this.backlog.shift();
    }
  }

  private execute(r: {
    op: number; region: number; offset: number; size: number; payload: Buffer; status: number;
  }): [number, (Uint8Array | number)?] {
    if (r.status !== 0) return [r.status];
    if (r.op === C.OP_CONTROL) {
      if (r.region === C.CTL_ALLOCATE) {
        const id = this.nextRegion++;
        this.regions.set(id, Buffer.alloc(r.size));
        const reply = Buffer.alloc(C.SIZEOF_ALLOC_REPLY);
        reply.writeUInt32LE(id, C.ALLOC_REPLY_REGION);
        reply.writeUInt32LE(r.size, C.ALLOC_REPLY_CAPACITY);
        return [0, reply];
      }
      if (r.region === C.CTL_DEALLOCATE) return [this.regions.delete(r.offset) ? 0 : E.PD3_E_BAD_REGION!];
      return [E.PD3_E_BAD_OP!];
    }
    const mem = this.regions.get(r.region);
    if (mem === undefined) return [E.PD3_E_BAD_REGION!];
    if (r.offset + r.size > mem.length) return [E.PD3_E_RANGE!];
    if (r.op === C.OP_READ) return [0, mem.subarray(r.offset, r.offset + r.size)];
    if (r.op === C.OP_WRITE) {
      r.payload.copy(mem, r.offset);
      return [0, r.size];
    }
    return [E.PD3_E_BAD_OP!];
  }
}
