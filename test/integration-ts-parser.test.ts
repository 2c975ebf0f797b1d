// integration-ts-parser.test.ts — TS parsers inside pd3-agent: the built-in gRPC parser (a real
// @grpc/grpc-js client and server behind the tee proxy) and a user's module (test/fixtures/
// line-parser.mjs) name the keys, the agent prefetches them into the Loading Zone. Parsers run on
// the agent's JS thread behind the native bridge; a throwing parser costs a resync, not the agent.
import { randomBytes } from 'node:crypto';
import { createServer, connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { Pd3Host } from '../dist/host/index.js';
import { STORE_CONFIG, StoreClient, startStoreServer } from './fixtures/grpc/grpc-live.js';
import { Rig, kvRecord, waitUntil } from './integration-helpers.js';

const rig = new Rig();
afterEach(() => rig.teardown());

const LINE_PARSER = fileURLToPath(new URL('./fixtures/line-parser.mjs', import.meta.url));

/** Records in the built-in format (pd3/record.h), back to back. */
function kvPage(items: Array<[string, string]>): Buffer {
  return Buffer.concat(items.map(([key, value]) => kvRecord(key, value)));
}

/** A segment whose records are flushed to a fresh memory server, and an agent on it. */
async function setup(tag: string, agentArgs: (appPort: number) => string[], appPort: number) {
  const token = randomBytes(16).toString('hex');
  const server = await rig.memserver({ token });
  const host = rig.host(tag, { agentTimeoutMs: 2000 });
  const agent = await rig.agent(host.name, [server.port], token, [
    '--mirror', 'tee', '--app', `127.0.0.1:${appPort}`, '--tee-listen', '127.0.0.1:0', ...agentArgs(appPort),
  ]);
  const region = await host.allocate(1 << 20);
  const items: Array<[string, string]> = [];
  for (let i = 0; i < 40; ++i) items.push([`item-${i}`, `value-of-item-${i}`]);
  await host.write(region.region, 0, kvPage(items));
  return { host, agent, teePort: Number(agent.ready.teePort) };
}

/** The value checkAndReturn finds for `key` within `ms` (polling, as an app's loop would). */
async function fromZone(host: Pd3Host, key: string, ms = 3000): Promise<string> {
  const dest = Buffer.alloc(256);
  let got = '';
  await waitUntil(() => {
    const n = host.checkAndReturn(Buffer.from(key), dest);
    if (n > 0) got = dest.subarray(0, n).toString();
    return n > 0;
  }, ms, `${key} in the Loading Zone`, 2);
  return got;
}

describe('TS parsers in pd3-agent', () => {
  it('the gRPC parser: keys of real grpc-js calls are prefetched into the zone', async () => {
    const app = await startStoreServer();
    rig.defer(() => app.close());
    const { host, agent, teePort } = await setup('ts-grpc', () => ['--prefetch-parser', 'grpc', '--prefetch-parser-config', STORE_CONFIG], app.port);
    expect(String(agent.ready.prefetch)).toContain('grpc');
    const client = new StoreClient(teePort);
    rig.defer(() => client.close());
    await client.call('Get', { id: Buffer.from('item-3') });
    expect(await fromZone(host, 'item-3')).toBe('value-of-item-3');
    await client.call('MultiGet', { ids: ['item-10', 'item-11', 'item-12'].map((k) => Buffer.from(k)) });
    for (const k of ['item-10', 'item-11', 'item-12']) expect(await fromZone(host, k)).toBe(`value-of-${k}`);
    // A Put names its key as a WRITE: the host will hold it, so a Get of it is not prefetched.
    await client.call('Put', { key: Buffer.from('item-20'), value: Buffer.from('new') });
    await client.call('Get', { id: Buffer.from('item-20') });
    await client.call('Get', { id: Buffer.from('item-21') });
    expect(await fromZone(host, 'item-21')).toBe('value-of-item-21');
    expect(host.checkAndReturn(Buffer.from('item-20'), Buffer.alloc(64))).toBe(0);
  });

  it('a parser module: loaded from a file, and a throwing parser only costs a resync', async () => {
    const lines: string[] = [];
    const app = createServer((s: Socket) => s.on('data', (d) => lines.push(d.toString())));
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    rig.defer(() => new Promise<void>((r) => app.close(() => r())));
    const appPort = (app.address() as { port: number }).port;
    const { host, agent, teePort } = await setup('ts-line', () => ['--prefetch-parser', LINE_PARSER], appPort);
    expect(String(agent.ready.prefetch)).toContain('line');
    const client = connect(teePort, '127.0.0.1');
    rig.defer(() => client.destroy());
    await new Promise<void>((r) => client.once('connect', () => r()));
    client.write('GET item-1\nGET item-2\n');
    expect(await fromZone(host, 'item-1')).toBe('value-of-item-1');
    expect(await fromZone(host, 'item-2')).toBe('value-of-item-2');
    client.write('BOOM\nGET item-5\n');  // the parser throws: the flow resyncs past the line
    client.write('GET item-6\n');
    expect(await fromZone(host, 'item-6')).toBe('value-of-item-6');
    await waitUntil(() => lines.join('').includes('GET item-6'), 2000, 'the app got every byte');
  });

  it('refuses a module that is not a parser, and grpc without its config', async () => {
    const token = randomBytes(16).toString('hex');
    const server = await rig.memserver({ token });
    const host = rig.host('ts-bad');
    const notParser = fileURLToPath(new URL('./fixtures/not-a-parser.mjs', import.meta.url));
    await expect(
      rig.agent(host.name, [server.port], token, ['--prefetch-parser', notParser, '--mirror', 'tee', '--app', '127.0.0.1:9', '--tee-listen', '127.0.0.1:0']),
    ).rejects.toThrow(/must export createParser/);
    await expect(
      rig.agent(host.name, [server.port], token, ['--prefetch-parser', 'grpc', '--mirror', 'tee', '--app', '127.0.0.1:9', '--tee-listen', '127.0.0.1:0']),
    ).rejects.toThrow(/needs --prefetch-parser-config/);
  });
});
