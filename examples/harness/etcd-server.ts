// etcd-server.ts — a real single-member etcd on loopback for the pool tests and the pool benchmark:
// its own temporary data directory and free ports, stopped (or killed, and started again on the
// same data) by its user. Finding the binary is the caller's business (tests skip without it:
// test/etcd-server.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnOnSide } from './core-layout.js';
import { freePort } from './processes.js';

/** One etcd member: start(), stop() or kill(), start() again on the same data and ports. */
export class EtcdServer {
  readonly url: string;
  private readonly dir: string;
  private child: ChildProcess | null = null;

  private constructor(
    private readonly binary: string,
    private readonly clientPort: number,
    private readonly peerPort: number,
  ) {
    this.url = `http://127.0.0.1:${clientPort}`;
    this.dir = mkdtempSync(join(tmpdir(), 'pd3-etcd-'));
  }

  /** Picks ports and a data directory; does not start it. */
  static async create(binary: string): Promise<EtcdServer> {
    return new EtcdServer(binary, await freePort(), await freePort());
  }

  /** Starts it and waits until /health says so (10 s at most). It runs on the 'other' side of the
   *  core layout in force (core-layout.ts): the pool's control plane is not the data system. */
  async start(): Promise<void> {
    const peer = `http://127.0.0.1:${this.peerPort}`;
    const child = spawnOnSide('other', this.binary, [
      '--name', 'pd3-test', '--data-dir', join(this.dir, 'data'),
      '--listen-client-urls', this.url, '--advertise-client-urls', this.url,
      '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
      '--initial-cluster', `pd3-test=${peer}`, '--log-level', 'error',
    ], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`etcd exited (${child.exitCode}): ${stderr.slice(-500)}`);
      try {
        const r = await fetch(`${this.url}/health`);
        if (r.ok && ((await r.json()) as { health?: string }).health === 'true') return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`etcd did not become healthy within 10 s: ${stderr.slice(-500)}`);
  }

  /** SIGKILL, as a crash: the data stays for a start() again. */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  /** Stops it and removes its data. */
  async close(): Promise<void> {
    await this.signal('SIGTERM');
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async signal(sig: NodeJS.Signals): Promise<void> {
    const child = this.child;
    this.child = null;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill(sig);
    await gone;
  }
}
