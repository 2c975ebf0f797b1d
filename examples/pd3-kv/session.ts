// session.ts — the state of one client connection that commands see: transaction queue, name, and
// whether the connection closes after its replies.

let nextId = 1;

/** One client connection's command state. */
export class Session {
  readonly id = nextId++;
  /** CLIENT SETNAME. */
  name = '';
  /** Commands queued since MULTI, or null outside a transaction. */
  queued: Buffer[][] | null = null;
  /** A command was refused while queuing: EXEC answers EXECABORT. */
  aborted = false;
  /** QUIT or a protocol error: close once the replies so far are written. */
  closing = false;
}
