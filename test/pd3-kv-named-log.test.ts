// pd3-kv with a named remote log (--etcd --tenant --log-name): its regions are the tenant's named
// regions, kept under its lease, so a pd3-kv restarted with the same name opens the same regions
// again instead of allocating new ones; a restart under another name does not. Real etcd, a real
// memory server with its reaper, pd3-kv in sync mode, ioredis.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Logger } from '../dist/cli/logger.js';
import { startKv, type KvServer } from '../dist/examples/pd3-kv/index.js';
import { constants } from '../dist/host/index.js';
import { MemServer, memServerOptions, tenantCredential } from '../dist/memserver/index.js';
import { EtcdServer, findEtcd } from './etcd-server.js';
import { waitUntil } from './integration-helpers.js';

const ETCD = findEtcd("pd3-kv's named remote log");
const SECRET = randomBytes(16).toString('hex');
const quiet = new Logger('pd3-kv', 'error');
// pd3-kv's own lines, kept for a failure's message: which regions were found again, which created.
const kvLines: string[] = [];
const kvLogger = new Logger('pd3-kv', 'info', (line) => kvLines.push(line));

describe.skipIf(ETCD === null)("pd3-kv's named remote log", () => {
  let etcd: EtcdServer;
  let server: MemServer;

  beforeAll(async () => {
    etcd = await EtcdServer.create(ETCD!);
    await etcd.start();
    server = await MemServer.start(
      memServerOptions({ listen: '127.0.0.1:0', token: SECRET, metrics: 'off', capacity: '64M', etcd: etcd.url, leaseTtl: 2, reclaimGrace: 30 }, {}),
      quiet,
    );
  }, 20_000);
  afterAll(async () => {
    await server?.close();
    await etcd?.close();
  });
  // Every pd3-kv started, closed even when a test fails half-way (its segment must not be left).
  const started: KvServer[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((kv) => kv.close()));
  });
  const closeKv = async (kv: KvServer): Promise<void> => {
    started.splice(started.indexOf(kv), 1);
    await kv.close();
  };

  const field = (kv: KvServer, name: string): number => Number(new RegExp(`\\r\\n${name}:(\\d+)`).exec(kv.info(['pd3kv']))![1]);

  const regionsHeld = (): number => server.tenants().find((t) => t.tenant === 'kv-tenant')?.regions ?? 0;

  /** A sync-mode pd3-kv of tenant `kv-tenant` with a 16 KiB budget of 4 KiB pages and 64 KiB regions,
   *  after 800 SETs of 200-byte values (about 170 KiB, so its log spills into three regions), once
   *  its flushes reached the third region. */
  async function runKv(logName: string, heldBefore = 0): Promise<KvServer> {
    const kv = await startKv(
      {
        listen: '127.0.0.1:0', mode: 'sync', pageSize: '4K', memoryBudget: '16K', regionSize: '64K',
        memservers: [`127.0.0.1:${server.port}`], etcd: etcd.url, leaseTtl: 2, tenant: 'kv-tenant', logName, logLevel: 'error',
      },
      { logger: kvLogger, env: { PD3_TOKEN: tenantCredential(SECRET, 'kv-tenant', constants.TENANT_CREDENTIAL_CONTEXT) } },
    );
    started.push(kv);
    const client = new Redis({ port: kv.port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
    await client.connect();
    const pipeline = client.pipeline();
    for (let i = 0; i < 800; i++) pipeline.set(`key:${i}`, `${i}:`.padEnd(200, 'v'));
    await pipeline.exec();
    // Every flushed page readable: a GET of an early key goes to remote memory.
    expect(await client.get('key:0')).toBe('0:'.padEnd(200, 'v'));
    client.disconnect();
    await waitUntil(() => field(kv, 'remote_regions') >= 3, 10_000, 'the log in three regions');
    // Opened ones, not only asked for: the server holds as many of this log's regions as pd3-kv has.
    await waitUntil(() => regionsHeld() - heldBefore >= field(kv, 'remote_regions'), 10_000, 'regions held by the server');
    return kv;
  }


  it('a restart with the same name opens the same regions; another name gets its own', async () => {
    const first = await runKv('orders');
    const regions = field(first, 'remote_regions');
    expect(regions).toBeGreaterThanOrEqual(3);
    expect(field(first, 'remote_regions_found')).toBe(0);
    await closeKv(first);
    expect(regionsHeld()).toBe(regions);

    const second = await runKv('orders');
    expect(field(second, 'remote_regions')).toBe(regions);
    // remote_regions counts a region from the moment it is asked for, remote_regions_found once its
    // open has answered: the last one may still be on its way when runKv returns.
    await waitUntil(() => field(second, 'remote_regions_found') === regions, 10_000, () =>
      `every region found again (found ${field(second, 'remote_regions_found')} of ${regions}, ` +
      `the server holds ${regionsHeld()}; pd3-kv's last lines:\n${kvLines.slice(-12).join('')})`);
    expect(regionsHeld()).toBe(regions); // none allocated anew
    await closeKv(second);

    const other = await runKv('invoices', regions);
    expect(field(other, 'remote_regions_found')).toBe(0);
    expect(regionsHeld()).toBe(regions + field(other, 'remote_regions'));
    await closeKv(other);
  }, 40_000);

  it('refuses a named log without its parts, or in local mode', async () => {
    const bad = async (settings: Record<string, unknown>): Promise<string> => {
      try {
        await startKv({ listen: '127.0.0.1:0', logLevel: 'error', ...settings }, { logger: quiet, env: { PD3_TOKEN: 't' } });
      } catch (e) {
        return (e as Error).message;
      }
      throw new Error('accepted');
    };
    const sync = { mode: 'sync', memservers: ['127.0.0.1:1'] };
    expect(await bad({ ...sync, tenant: 'a', logName: 'b' })).toMatch(/--tenant needs --etcd/);
    expect(await bad({ ...sync, etcd: etcd.url, tenant: 'a' })).toMatch(/needs --tenant and --log-name/);
    expect(await bad({ ...sync, etcd: etcd.url, tenant: 'a b', logName: 'x' })).toMatch(/"tenant".*tenant name is 1 to 64/);
    expect(await bad({ mode: 'local', etcd: etcd.url, tenant: 'a', logName: 'x' })).toMatch(/local mode keeps no remote log/);
  });
});
