// connection.ts — one client connection: bytes in through the RESP reader, batches to the
// executor, replies back in order; pauses reading while the client has too much outstanding.
import type { Socket } from 'node:net';
import type { Executor } from './executor.js';
import { RespReader, type RespLimits } from './resp-reader.js';
import { Session } from './session.js';

/** Batches of one connection queued or running at most before it stops reading. */
const MAX_PENDING_BATCHES = 16;
/** Reply bytes waiting in the socket at most before it stops reading. */
const MAX_UNSENT_BYTES = 8 * 2 ** 20;

/** Serves one socket until it closes. */
export class Connection {
  readonly session = new Session();
  private readonly reader: RespReader;
  private pending = 0;
  private paused = false;
  private ended = false;

  constructor(
    private readonly socket: Socket,
    private readonly executor: Executor,
    limits: RespLimits,
  ) {
    this.reader = new RespReader(limits);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => this.maybeResume());
    socket.on('error', () => socket.destroy());
  }

  /** Closes the socket at once (server shutdown). */
  destroy(): void {
    this.ended = true;
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    if (this.ended) return;
    const { commands, error } = this.reader.feed(chunk);
    if (commands.length === 0 && error === null) return;
    if (error !== null) this.ended = true; // nothing after a framing error is read
    this.pending++;
    this.executor.submit({
      session: this.session,
      commands,
      protocolError: error,
      deliver: (replies) => this.deliver(replies),
    });
    this.maybePause();
  }

  private deliver(replies: Buffer): void {
    this.pending--;
    if (this.socket.destroyed) return;
    if (replies.length > 0) this.socket.write(replies);
    if (this.session.closing) {
      this.ended = true;
      this.socket.end();
      return;
    }
    this.maybePause();
    this.maybeResume();
  }

  private maybePause(): void {
    if (this.paused || (this.pending < MAX_PENDING_BATCHES && this.socket.writableLength < MAX_UNSENT_BYTES)) return;
    this.paused = true;
    this.socket.pause();
  }

  private maybeResume(): void {
    if (!this.paused || this.pending >= MAX_PENDING_BATCHES / 2 || this.socket.writableLength >= MAX_UNSENT_BYTES) return;
    this.paused = false;
    this.socket.resume();
  }
}
