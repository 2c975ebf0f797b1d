// connection.ts — one client connection: bytes in through the RESP reader, batches to the
// executor, replies back in order; pauses reading while the client has too much outstanding.
import type { Socket } from 'node:net';
import type { Executor } from './executor.js';
import { RespReader, type RespLimits } from './resp-reader.js';
import { Session } from './session.js';
import type { KvStats } from './stats.js';

/** Batches of one connection queued or running at most before it stops reading. */
const MAX_PENDING_BATCHES = 16;
/** Reply bytes waiting in the socket at most before it stops reading. */
const MAX_UNSENT_BYTES = 8 * 2 ** 20;

/** How long a closing connection may take to flush its last replies before it is destroyed. */
const CLOSE_TIMEOUT_MS = 10_000;

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
    private readonly stats: KvStats,
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
    this.stats.netInputBytes += chunk.length; // counted first: it shows whether a closing socket still reads
    if (this.ended) return;
    const { commands, error } = this.reader.feed(chunk);
    if (commands.length === 0 && error === null) return;
    if (error !== null) this.stopReading(); // nothing after a framing error is read
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
      this.close();
      return;
    }
    this.maybePause();
    this.maybeResume();
  }

  // Stops taking bytes from the kernel: what the client sends next is never read into memory
  // (Redis closes the connection after a protocol error instead of draining it).
  private stopReading(): void {
    this.ended = true;
    this.paused = true;
    this.socket.pause();
    this.socket.removeAllListeners('data');
  }

  // QUIT or a protocol error: the replies so far are flushed, then the socket is destroyed, not
  // half-closed — a half-closed socket would keep reading (and discarding) whatever the client
  // sends. Unread bytes in the kernel make the close a reset, so a client still writing gets
  // EPIPE/ECONNRESET at once, as with Redis.
  private close(): void {
    this.stopReading();
    const socket = this.socket;
    if (socket.writableLength === 0) {
      socket.destroy();
      return;
    }
    socket.end(() => socket.destroy());
    // A client that never reads its replies must not keep the socket open forever.
    setTimeout(() => socket.destroy(), CLOSE_TIMEOUT_MS).unref();
  }

  private maybePause(): void {
    if (this.paused || (this.pending < MAX_PENDING_BATCHES && this.socket.writableLength < MAX_UNSENT_BYTES)) return;
    this.paused = true;
    this.socket.pause();
  }

  private maybeResume(): void {
    if (this.ended || !this.paused || this.pending >= MAX_PENDING_BATCHES / 2 || this.socket.writableLength >= MAX_UNSENT_BYTES) return;
    this.paused = false;
    this.socket.resume();
  }
}
