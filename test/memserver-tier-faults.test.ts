// pd3-memserver --dram-budget on a failing disk, for real: the server runs in a mount namespace
// the test creates (unshare -m, root only) over a tiny tmpfs. A full disk answers the allocation
// that needs the space PD3_E_NOSPACE and leaves every acknowledged byte readable; a read-only data
// directory stops the server at start with exit 1 and the reason, never serving half of it.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../dist/examples/harness/processes.js';
import { Pd3Host } from '../dist/host/index.js';
import { uniqueName } from './helpers.js';
import { waitUntil } from './integration-helpers.js';
import { reportSkip } from './optional-program.js';

const MEMSERVER_CLI = new URL('../dist/memserver/cli.js', import.meta.url).pathname;
const PAGE = 4096;
const root = process.getuid?.() === 0 && spawnSync('unshare', ['-m', 'true']).status === 0;
if (!root) reportSkip('skipped: the tier on a full or read-only tmpfs (needs root and unshare -m, util-linux)');

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!();
});

// Starts pd3-memserver with a tiered --data-dir DATA inside its own mount namespace (the mounts
// disappear with the process), after `mounts` (shell text, run there with $1 = DIR) prepared it.
function startInNamespace(dir: string, mounts: string, data: string, port: number) {
  const script = `${mounts} && exec "$2" "$3" --listen 127.0.0.1:${port} --capacity 16M --metrics off ` +
    `--index-initial-keys 64 --data-dir "${data}" --dram-budget 8K --page-size 4K`;
  const child = spawn('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script, 'sh', dir, process.execPath, MEMSERVER_CLI], {
    stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, PD3_TOKEN: 't' },
  });
  cleanup.push(() => child.kill('SIGKILL'));
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, stderr: () => err, exited };
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pd3-tier-fs-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe.skipIf(!root)('pd3-memserver --dram-budget on a failing disk', () => {
  it('answers an allocation on a full disk PD3_E_NOSPACE and keeps what was written', async () => {
    const port = await freePort();
    const dir = tempDir();
    const server = startInNamespace(dir, 'mount -t tmpfs -o size=224k none "$1" && mkdir "$1/data"', `${dir}/data`, port);
    await waitUntil(() => server.stderr().includes('"ready"'), 10_000, 'memory server ready');
    const host = Pd3Host.create({ name: uniqueName('tier-full'), directOnly: true, directServers: [`127.0.0.1:${port}`], directToken: 't' });
    cleanup.push(() => host.close());
    const regions: number[] = [];
    let refusal: unknown = null;
    for (let i = 0; i < 8 && refusal === null; i++) {
      try {
        regions.push((await host.allocate(64 * 1024)).region);
      } catch (e) {
        refusal = e;
      }
    }
    expect(regions.length).toBeGreaterThan(0);
    expect(regions.length).toBeLessThan(8);
    expect((refusal as { code?: string }).code).toBe('PD3_E_NOSPACE');
    // Every region that was allocated works through the four-page tier, before and after the refusal.
    for (const [i, region] of regions.entries()) {
      for (let page = 0; page < 16; page += 3) await host.write(region, page * PAGE, Buffer.alloc(PAGE, i * 16 + page + 1));
    }
    for (const [i, region] of regions.entries()) {
      for (let page = 0; page < 16; page += 3) {
        expect((await host.read(region, page * PAGE, PAGE)).equals(Buffer.alloc(PAGE, i * 16 + page + 1))).toBe(true);
      }
    }
  }, 30_000);

  it('refuses to start on a read-only data directory that holds regions', async () => {
    // A data directory with a region, made by a server run the usual way and stopped.
    const dir = tempDir();
    const port = await freePort();
    const first = startInNamespace(dir, 'true', `${dir}/data`, port);
    await waitUntil(() => first.stderr().includes('"ready"'), 10_000, 'memory server ready');
    const host = Pd3Host.create({ name: uniqueName('tier-ro'), directOnly: true, directServers: [`127.0.0.1:${port}`], directToken: 't' });
    await host.write((await host.allocate(4 * PAGE)).region, 0, Buffer.alloc(PAGE, 7));
    host.close();
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    // The same directory bind-mounted read-only over itself.
    const server = startInNamespace(dir, 'mount --bind "$1/data" "$1/data" && mount -o remount,bind,ro "$1/data"',
      `${dir}/data`, await freePort());
    expect(await server.exited).toBe(1);
    expect(server.stderr()).toMatch(/region-1\.pd3: Read-only file system/);
  }, 30_000);
});
