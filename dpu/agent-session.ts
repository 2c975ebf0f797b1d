// agent-session.ts — the agent's side of a host segment, for TS tools and tests: take requests,
// answer them, produce Loading Zone items. The Transfer Engine drives the same native session.
import { callNative } from '../common/errors.js';
import { addon, type NativeAgentHandle, type NativeRequest } from './native.js';

/** A request taken from the request ring (see native/include/pd3/wire.h, pd3_request). */
export type AgentRequest = NativeRequest;

/** The agent's attachment to one host segment. Use from one thread only. */
export class AgentSession {
  private native: NativeAgentHandle | null;

  private constructor(native: NativeAgentHandle) {
    this.native = native;
  }

  /** Attaches to the segment `name`, validating it; throws Pd3Error with the reason if refused.
   *  `dmaLatencyUs`: reach host memory through the DMA latency backend (0..1000 µs per operation;
   *  docs/transfer-engine.md); absent: shared memory. */
  static attach(name: string, options: { dmaLatencyUs?: number } = {}): AgentSession {
    const ns = options.dmaLatencyUs === undefined ? undefined : Math.round(options.dmaLatencyUs * 1000);
    return new AgentSession(callNative(() => new addon.AgentHandle(name, ns)));
  }

  /** Refreshes the heartbeat the host checks. */
  beat(): void {
    this.handle().beat();
  }

  /** Takes every contiguous published request (up to `max`) in one pass. */
  takeRequests(max = 1024): AgentRequest[] {
    return this.handle().takeRequests(max);
  }

  /** Answers request `opId` with `status` (0 = ok) and read data or a size. Returns 0 or a
   *  negative status (PD3_E_AGAIN while the host has not drained the response ring). */
  respond(opId: number, status: number, data?: Uint8Array | number): number {
    return this.handle().respond(opId, status, data);
  }

  /** Publishes a Loading Zone item; returns its seq, or a negative status. */
  produce(opId: number, key: Uint8Array, data: Uint8Array): number {
    return this.handle().produce(opId, key, data);
  }

  /** Frees consumed and invalidated items at the head of the zone; returns how many. */
  clean(): number {
    return this.handle().clean();
  }

  /** Withdraws every unconsumed item of `key`; returns how many. */
  invalidate(key: Uint8Array): number {
    return this.handle().invalidate(key);
  }

  /** Items in the zone not yet freed. */
  pending(): number {
    return this.handle().pending();
  }

  close(): void {
    this.native?.close();
    this.native = null;
  }

  private handle(): NativeAgentHandle {
    if (this.native === null) throw new Error('agent session closed');
    return this.native;
  }
}
