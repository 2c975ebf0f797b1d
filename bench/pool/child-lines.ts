// child-lines.ts — talks to a benchmark's child process in JSON lines: one object per line on its
// stdout, commands as lines on its stdin.
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** The JSON-lines conversation with one child. */
export class ChildLines {
  private readonly lines: AsyncIterator<string>;

  constructor(
    private readonly child: ChildProcess,
    private readonly what: string,
  ) {
    this.lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  }

  /** The next object the child prints; rejects if it exits first or prints something else. */
  async next(): Promise<Record<string, unknown>> {
    const line = await this.lines.next();
    if (line.done) throw new Error(`${this.what} exited early (${this.child.exitCode ?? this.child.signalCode})`);
    try {
      return JSON.parse(line.value) as Record<string, unknown>;
    } catch {
      throw new Error(`${this.what} printed a line that is not JSON: ${line.value}`);
    }
  }

  /** Sends one command line. */
  send(command: object): void {
    this.child.stdin!.write(`${JSON.stringify(command)}\n`);
  }

  /** SIGKILL (a crash); resolves once it is gone. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const gone = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGKILL');
    await gone;
  }
}
