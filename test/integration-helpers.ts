// integration-helpers.ts — shared by the integration tests that start real pd3-memserver and
// pd3-agent processes: a cleanup registry, bounded waits, metrics and log scraping, and a
// re-export of the random-operation driver (workers/model-run.mjs, shared with worker threads).
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pd3Error, Pd3Host, type Pd3HostOptions } from '../dist/host/index.js';
import {
  AGENT_CLI,
  startAgent,
  startDaemon,
  startMemserver,
  type Daemon,
  type MemserverSpec,
} from '../dist/examples/harness/processes.js';
import { uniqueName } from './helpers.js';

export { firstLoggedAt, logEvents } from '../dist/examples/harness/processes.js';
export { Rand, randomModelRun } from './workers/model-run.mjs';

/** One key/value record in the built-in format (pd3/record.h), layout from the C header. */
export { kvRecord } from '../dist/examples/harness/tenant-records.js';

/** Everything one test started, torn down in reverse order whatever happened (afterEach). */
export class Rig {
  private readonly undo: Array<() => unknown> = [];

  /** A pd3-memserver on loopback (metrics off), stopped at teardown. */
  async memserver(spec: MemserverSpec): Promise<Daemon & { port: number; metrics: string }> {
    const d = await startMemserver(spec);
    this.undo.push(() => d.stop(2000));
    return d;
  }

  /** A pd3-memserver with its metrics endpoint on a free loopback port (256 MiB unless the spec
   *  says); `metrics` is the address from its ready line. */
  memserverWithMetrics(spec: MemserverSpec): Promise<Daemon & { port: number; metrics: string }> {
    return this.memserver({ capacity: '256M', ...spec, metrics: true });
  }

  /** A pd3-agent serving `segment`, stopped at teardown. */
  async agent(segment: string, ports: number[], token: string, extra: string[] = []): Promise<Daemon> {
    const d = await startAgent(segment, ports, token, extra);
    this.undo.push(() => d.stop(2000));
    return d;
  }

  /** A pd3-agent with its metrics endpoint on a free loopback port. */
  async agentWithMetrics(segment: string, ports: number[], token: string): Promise<Daemon & { metrics: string }> {
    const args = ['--segment', segment, '--servers', ports.map((p) => `127.0.0.1:${p}`).join(','),
      '--metrics', '127.0.0.1:0', '--log-level', 'info'];
    const d = await startDaemon(AGENT_CLI, args, token);
    this.undo.push(() => d.stop(2000));
    return Object.assign(d, { metrics: String(d.ready.metrics) });
  }

  /** A new host segment with a unique name, closed at teardown. */
  host(tag: string, options: Omit<Pd3HostOptions, 'name'> = {}): Pd3Host {
    const h = Pd3Host.create({ name: uniqueName(tag), ...options });
    this.undo.push(() => h.close());
    return h;
  }

  /** A fresh temporary directory, removed at teardown. */
  tempDir(tag: string): string {
    const dir = mkdtempSync(join(tmpdir(), `pd3-it-${tag}-`));
    this.undo.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  /** Registers another teardown step. */
  defer(step: () => unknown): void {
    this.undo.push(step);
  }

  /** Runs every teardown step (latest first); a failing step does not skip the others. */
  async teardown(): Promise<void> {
    const errors: unknown[] = [];
    while (this.undo.length > 0) {
      try {
        await this.undo.pop()!();
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length > 0) throw errors[0];
  }
}

/** Rejects with a message naming `what` if `p` has not settled within `ms`. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not settled within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every `stepMs` until it returns true; throws naming `what` after `ms`. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  ms: number,
  what: string | (() => string),
  stepMs = 20,
): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${typeof what === 'string' ? what : what()}: not true within ${ms} ms`);
    await sleep(stepMs);
  }
}

/** Allocates a region through an agent that may still be connecting to its memory server
 *  (retried for up to 5 s); returns the region id. */
export async function allocateThroughAgent(host: Pd3Host, bytes: number): Promise<number> {
  let region = 0;
  await waitUntil(async () => {
    try {
      region = (await host.allocate(bytes)).region;
      return true;
    } catch {
      return false; // the agent is still connecting to the server
    }
  }, 5000, 'allocation through the agent');
  return region;
}

/** The settled outcome of a request: its value, or the Pd3Error code it rejected with. */
export type Outcome<T> = { ok: true; value: T; at: number } | { ok: false; code: string; at: number };

/** Settles `p` into an Outcome stamped with the time (ms) it settled; non-PD3 errors pass through. */
export function outcome<T>(p: Promise<T>): Promise<Outcome<T>> {
  return p.then(
    (value) => ({ ok: true as const, value, at: Date.now() }),
    (e: unknown) => {
      if (e instanceof Pd3Error) return { ok: false as const, code: e.code, at: Date.now() };
      throw e;
    },
  );
}

/** The code a request rejected with, or 'resolved' (so expectations print something useful). */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  const o = await outcome(p);
  return o.ok ? 'resolved' : o.code;
}

/** GET http://<address><path>; resolves with the body of a 200 answer. */
export function httpGet(address: string, path: string, ms = 3000): Promise<string> {
  return within(new Promise((resolve, reject) => {
    const req = request(`http://${address}${path}`, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`GET ${path}: ${res.statusCode} ${body}`))));
    });
    req.on('error', reject);
    req.end();
  }), ms, `GET ${address}${path}`);
}

/** The value of an unlabelled metric in a Prometheus text scrape; throws if it is absent. */
export async function metric(address: string, name: string): Promise<number> {
  const text = await httpGet(address, '/metrics');
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`metric ${name} not in the scrape of ${address}`);
  return Number(line.slice(name.length + 1));
}

/** Reads a whole region in chunks; resolves with its bytes. */
export async function readAll(host: Pd3Host, region: number, capacity: number, chunk = 32768): Promise<Buffer> {
  const parts: Array<Promise<Buffer>> = [];
  for (let at = 0; at < capacity; at += chunk) parts.push(host.read(region, at, Math.min(chunk, capacity - at)));
  return Buffer.concat(await Promise.all(parts));
}
