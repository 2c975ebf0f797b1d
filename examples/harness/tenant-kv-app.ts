// tenant-kv-app.ts — the data system of the two-tenant isolation check: a tiny RESP server (GET
// only) over one tenant's records in remote memory (tenant-records.ts). On each GET it looks in its
// Loading Zone first (checkAndReturn: the agent prefetched the key when the request went through
// its tee proxy) and, on a zone miss, reads the tenant's own record remotely. Every value it obtains
// either way is judged (tenant-values.ts) and counted by where it came from. Requests are handled
// `delayMs` after they arrive, like a busy server's queueing delay: the window the prefetch uses.
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pd3Host } from 'pd3/host';
import type { TenantRecords } from './tenant-records.js';
import { keyNumber, noVerdicts, type TenantValues, type VerdictCounts } from './tenant-values.js';

/** What the app obtained, by source. */
export interface TenantAppCounts {
  /** GETs answered. */
  gets: number;
  /** Verdicts of the values taken from the Loading Zone (their sum: the zone hits). */
  zone: VerdictCounts;
  /** Verdicts of the values read remotely on a zone miss. */
  remote: VerdictCounts;
}

/** One tenant's RESP app. */
export class TenantKvApp {
  readonly counts: TenantAppCounts = { gets: 0, zone: noVerdicts(), remote: noVerdicts() };
  private readonly dest = Buffer.alloc(4096);

  constructor(
    private readonly host: Pd3Host,
    private readonly values: TenantValues,
    private readonly records: TenantRecords,
    private readonly delayMs: number,
  ) {}

  /** Values taken from the Loading Zone. */
  get zoneHits(): number {
    return sum(this.counts.zone);
  }

  /** Values obtained that were another tenant's, from either source. */
  get foreign(): number {
    return this.counts.zone.foreign + this.counts.remote.foreign;
  }

  /** Serves one client connection (a connection of the agent's tee proxy). */
  serve(socket: Socket): void {
    let pending: Buffer = Buffer.alloc(0);
    let busy: Promise<void> = Promise.resolve();
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: Buffer) => {
      const due = Date.now() + this.delayMs;
      busy = busy
        .then(async () => {
          const wait = due - Date.now();
          if (wait > 0) await sleep(wait);
          pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
          const { commands, consumed } = parseCommands(pending);
          pending = pending.subarray(consumed);
          const replies = await Promise.all(commands.map((c) => this.execute(c)));
          if (replies.length > 0 && !socket.destroyed) socket.write(replies.join(''));
        })
        .catch((e: unknown) => {
          socket.destroy(e instanceof Error ? e : new Error(String(e)));
        });
    });
  }

  private async execute(words: string[]): Promise<string> {
    if (words[0]?.toUpperCase() !== 'GET' || words.length !== 2) return '-ERR only GET key\r\n';
    const key = words[1]!;
    this.counts.gets++;
    const n = this.host.checkAndReturn(Buffer.from(key), this.dest);
    let value: string | null;
    if (n > 0) {
      value = this.dest.toString('utf8', 0, n);
      this.counts.zone[this.values.judge(key, value)]++;
    } else {
      const at = this.records.where[keyNumber(key)];
      if (at === undefined) return '$-1\r\n';
      value = (await this.host.read(at.region, at.offset, at.length)).toString('utf8');
      this.counts.remote[this.values.judge(key, value)]++;
    }
    return `$${Buffer.byteLength(value)}\r\n${value}\r\n`;
  }
}

/** The sum of a verdict count. */
export function sum(c: VerdictCounts): number {
  return c.own + c.foreign + c.wrong + c.missing;
}

/** Whole RESP arrays of bulk strings at the start of `buf` (a test app's minimal command reader),
 *  and the bytes they took. */
export function parseCommands(buf: Buffer): { commands: string[][]; consumed: number } {
  const commands: string[][] = [];
  let at = 0;
  for (;;) {
    const start = at;
    if (at >= buf.length || buf[at] !== 0x2a) return { commands, consumed: start };
    let nl = buf.indexOf('\r\n', at);
    if (nl < 0) return { commands, consumed: start };
    const n = Number(buf.toString('latin1', at + 1, nl));
    at = nl + 2;
    const words: string[] = [];
    for (let i = 0; i < n; i++) {
      nl = buf.indexOf('\r\n', at);
      if (nl < 0 || buf[at] !== 0x24) return { commands, consumed: start };
      const len = Number(buf.toString('latin1', at + 1, nl));
      if (buf.length < nl + 2 + len + 2) return { commands, consumed: start };
      words.push(buf.toString('utf8', nl + 2, nl + 2 + len));
      at = nl + 2 + len + 2;
    }
    commands.push(words);
  }
}
