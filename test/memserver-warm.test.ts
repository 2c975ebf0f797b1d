// pd3-memserver --warm-ahead: the server hints the bytes of a frame's next reads and writes into
// the CPU's cache before it runs them. Checked here through a real server and the host library's
// direct mode: the hints are counted (stats and /metrics) by default and not at all with 0, the
// answers are the same either way, and the TS bound on the flag is the native one.
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { Pd3Host } from '../dist/host/index.js';
import { Logger, MAX_WARM_AHEAD, MemServer, memServerOptions, type MemServerSettings } from '../dist/memserver/index.js';
import { addon } from '../dist/memserver/native.js';
import { uniqueName } from './helpers.js';

const cleanup: Array<() => unknown> = [];
const logged: string[] = []; // warnings and errors of the servers: none expected
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!();
  expect(logged.splice(0)).toEqual([]);
});

/** Starts a server with `settings`, writes 64-byte values at 300 offsets of one region (many in
 *  flight at once, so frames carry many records), reads them back; returns the values read and
 *  the server's warm_hints and /metrics text. */
async function writeAndReadBack(settings: Partial<MemServerSettings>, offsets: number[], values: Buffer[]) {
  const server = await MemServer.start(
    memServerOptions({ listen: '127.0.0.1:0', token: 't', capacity: '64M', ...settings }, {}),
    new Logger('memserver', 'warn', (line) => logged.push(line)),
  );
  cleanup.push(() => server.close());
  const host = Pd3Host.create({ name: uniqueName('warm'), directOnly: true, directServers: [`127.0.0.1:${server.port}`], directToken: 't' });
  cleanup.push(() => host.close());
  const { region } = await host.allocate(8 << 20);
  await Promise.all(offsets.map((off, i) => host.write(region, off, values[i]!)));
  const read = await Promise.all(offsets.map((off) => host.read(region, off, 64)));
  const metrics = await (await fetch(`http://${server.metricsAddress!.host}:${server.metricsAddress!.port}/metrics`)).text();
  return { read, hints: server.stats().warm_hints!, metrics };
}

describe('pd3-memserver --warm-ahead', () => {
  it('mirrors the addon’s bound', () => {
    expect(MAX_WARM_AHEAD).toBe(addon.maxWarmAhead);
  });

  it('hints reads and writes by default, none with 0, and answers the same', async () => {
    const offsets = Array.from({ length: 300 }, (_, i) => ((i * 2654435761) % ((8 << 20) / 64)) * 64 + (i % 2) * 32);
    const values = offsets.map(() => randomBytes(64));
    const on = await writeAndReadBack({ metrics: '127.0.0.1:0' }, offsets, values);
    const off = await writeAndReadBack({ metrics: '127.0.0.1:0', warmAhead: 0 }, offsets, values);
    for (const r of [on, off]) expect(r.read.map((b) => b.toString('hex'))).toEqual(values.map((b) => b.toString('hex')));
    // Offsets at 32 bytes into a line straddle two lines: 1 or 2 lines per record, 600 records.
    expect(on.hints).toBeGreaterThanOrEqual(600);
    expect(on.hints).toBeLessThanOrEqual(900);
    expect(on.metrics).toMatch(new RegExp(`^pd3_memserver_warm_hints_total ${on.hints}$`, 'm'));
    expect(off.hints).toBe(0);
    expect(off.metrics).toMatch(/^pd3_memserver_warm_hints_total 0$/m);
  });

  it('refuses a warm-ahead the native server would', async () => {
    expect(() => memServerOptions({ listen: '127.0.0.1:0', token: 't', warmAhead: MAX_WARM_AHEAD + 1 }, {})).toThrow(
      /warmAhead": must be from 0 to 256/,
    );
    // Past the TS check (a caller of the addon itself), the native server refuses it too.
    expect(() => new addon.MemServerHandle({ host: '127.0.0.1', port: 0, serverId: 0, token: 't', warmAhead: MAX_WARM_AHEAD + 1 })).toThrow(
      /warmAhead/,
    );
  });
});
