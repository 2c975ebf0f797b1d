// pd3-memserver --give-back: when MemAvailable falls under the headroom's share of MemTotal, the
// server writes its coldest regions to their files and drops them from memory, logs and counts it,
// and serves them from the files with the same bytes. The meminfo is a file the test controls
// (--meminfo), so the pressure is real to the server without starving the machine.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Logger } from '../dist/cli/logger.js';
import { Pd3Host } from '../dist/host/index.js';
import { MemServer, memServerOptions } from '../dist/memserver/index.js';
import { uniqueName } from './helpers.js';
import { waitUntil } from './integration-helpers.js';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!();
});

const meminfo = (totalKib: number, availableKib: number): string =>
  `MemTotal:       ${totalKib} kB\nMemFree:        1 kB\nMemAvailable:   ${availableKib} kB\n`;

describe('pd3-memserver --give-back', () => {
  it('gives the coldest regions back under pressure and serves them from their files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pd3-giveback-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const info = join(dir, 'meminfo');
    writeFileSync(info, meminfo(1 << 20, 1 << 19));
    const lines: string[] = [];
    const server = await MemServer.start(
      memServerOptions({
        listen: '127.0.0.1:0', token: 't', metrics: 'off', capacity: '64M', dataDir: join(dir, 'data'),
        meminfo: info, pressureCheckMs: 50,
      }, {}),
      new Logger('memserver', 'info', (l) => lines.push(l)),
    );
    cleanup.push(() => server.close());
    const host = Pd3Host.create({ name: uniqueName('giveback'), directOnly: true, directServers: [`127.0.0.1:${server.port}`], directToken: 't' });
    cleanup.push(() => host.close());

    const size = 1 << 20;
    const data = Buffer.alloc(size);
    for (let i = 0; i < size; i++) data[i] = (i * 13 + 5) & 0xff;
    const cold = await host.allocate(size);
    const hot = await host.allocate(size);
    await host.write(cold.region, 0, data);
    await host.write(hot.region, 0, data);
    await host.read(hot.region, 0, 16);
    await new Promise((r) => setTimeout(r, 200));
    expect(server.stats().given_back_bytes).toBe(0); // no pressure yet

    // 256 KiB under the 15 % headroom.
    writeFileSync(info, meminfo(1 << 20, Math.floor((1 << 20) * 0.15) - 256));
    await waitUntil(() => server.stats().given_back_regions > 0, 3000, 'memory given back');
    // While the pressure lasts, every check gives more back (the hot region next): end it.
    writeFileSync(info, meminfo(1 << 20, 1 << 19));
    expect(server.stats().given_back_bytes).toBeGreaterThanOrEqual(256 * 1024);
    await waitUntil(() => lines.some((l) => l.includes('"store.gave_back"')), 2000, 'store.gave_back logged');
    // The first give-back took the cold region alone: it covered the shortfall.
    expect(lines.find((l) => l.includes('"store.gave_back"'))).toMatch(/ of 1 cold regions/);
    expect((await host.read(cold.region, 0, size)).equals(data)).toBe(true);
    // Counters are published after the server's loop pass, which may end after our answer.
    await waitUntil(() => server.stats().file_reads >= 1, 2000, 'a read from the file counted');
    expect(server.stats().file_read_bytes).toBeGreaterThanOrEqual(256 * 1024);
    expect((await host.read(hot.region, 0, size)).equals(data)).toBe(true);
  });

  it('refuses bad give-back flags', () => {
    expect(() => memServerOptions({ giveBack: 'maybe' as unknown as boolean }, { PD3_TOKEN: 't' })).toThrow(/giveBack/);
    expect(() => memServerOptions({ pressureCheckMs: -1 }, { PD3_TOKEN: 't' })).toThrow(/pressureCheckMs/);
  });
});
