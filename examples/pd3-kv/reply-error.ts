// reply-error.ts — ReplyError: a command's failure that becomes a RESP error reply ("-ERR ...").

/** Thrown by commands and the store; the message is the reply text, starting with its code
 *  ("ERR", "EXECABORT", ...). Never thrown for a bug: those become internal-error replies. */
export class ReplyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReplyError';
  }
}
