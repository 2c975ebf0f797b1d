// pd3-kv-redis-diff.test.ts — differential test: a real redis-server and pd3-kv (local mode) get
// the same seeded random streams of the commands pd3-kv implements (raw RESP, pipelines and
// MULTI/EXEC), and every reply must be the same bytes (TTL/PTTL within the clock's slack).
// Default: 20 seeds × 1,000 commands; PD3_DIFF_COMMANDS (per seed) and PD3_DIFF_SEEDS run longer.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Logger } from '../dist/cli/logger.js';
import { freePort } from '../dist/examples/harness/processes.js';
import { startKv, type KvServer } from '../dist/examples/pd3-kv/index.js';
import { optionalProgram } from './optional-program.js';
import { DiffCommands, type DiffCommand } from './redis-diff-commands.js';
import { RawRespClient } from './resp-raw-client.js';

const REDIS_SERVER = optionalProgram({ name: 'redis-server', debianPackage: 'redis-server', needs: 'pd3-kv compared with redis-server on random commands' });
const SEEDS = Number(process.env.PD3_DIFF_SEEDS ?? 20);
const COMMANDS = Number(process.env.PD3_DIFF_COMMANDS ?? 1000);
const quiet = new Logger('pd3-kv', 'error');

async function connectRetrying(port: number): Promise<RawRespClient> {
  for (let i = 0; ; ++i) {
    try {
      return await RawRespClient.connect(port);
    } catch (e) {
      if (i > 100) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Whether two replies agree: the same bytes, or integers within the slack of a loose command (the
 *  clock's for TTL/PTTL; for DBSIZE, the keys that may hold a past expiry not collected yet). */
function same(cmd: DiffCommand, a: Buffer, b: Buffer): boolean {
  if (a.equals(b)) return true;
  if (cmd.loose === undefined) return false;
  const x = /^:(-?\d+)\r\n$/.exec(a.toString('latin1'));
  const y = /^:(-?\d+)\r\n$/.exec(b.toString('latin1'));
  if (x === null || y === null) return false;
  const slack = cmd.loose === 'ttl' ? 1 : cmd.loose === 'pttl' ? 1000 : cmd.slack ?? 0;
  return Math.abs(Number(x[1]) - Number(y[1])) <= slack;
}

const show = (args: Buffer[]): string => args.map((a) => JSON.stringify(a.toString('latin1'))).join(' ');

describe.skipIf(REDIS_SERVER === null)('pd3-kv answers as redis-server', () => {
  let dir: string;
  let redis: ChildProcess;
  let redisPort: number;
  let kv: KvServer;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pd3-kv-diff-'));
    redisPort = await freePort();
    redis = spawn(REDIS_SERVER!, ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
    kv = await startKv({ listen: '127.0.0.1:0', mode: 'local', logLevel: 'error' }, { logger: quiet });
    (await connectRetrying(redisPort)).close();
  });

  afterAll(async () => {
    await kv?.close();
    redis?.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${SEEDS} seeds × ${COMMANDS} random commands give the same replies`, async () => {
    const differences: string[] = [];
    let sent = 0;
    for (let seed = 1; seed <= SEEDS; ++seed) {
      const gen = new DiffCommands(seed);
      const [r, k] = await Promise.all([connectRetrying(redisPort), RawRespClient.connect(kv.port)]);
      const flush = [[Buffer.from('FLUSHALL')]];
      await Promise.all([r.pipeline(flush), k.pipeline(flush)]);
      for (let done = 0; done < COMMANDS; ) {
        const group: DiffCommand[] = [];
        const tx = gen.transactionSize();
        if (tx > 0) {
          group.push({ args: [Buffer.from('MULTI')] });
          // Replies inside EXEC's array are compared byte for byte: no clock-dependent commands.
          for (let i = 0; i < tx; ++i) {
            const c = gen.next();
            if (c.loose === undefined) group.push(c);
            else group.push({ args: c.loose === 'dbsize' ? [Buffer.from('PING')] : [Buffer.from('EXISTS'), c.args[1]!] });
          }
          group.push({ args: [Buffer.from(gen.pipelineSize() === 1 ? 'DISCARD' : 'EXEC')] });
        } else {
          for (let i = gen.pipelineSize(); i > 0; --i) group.push(gen.next());
        }
        const args = group.map((c) => c.args);
        const [a, b] = await Promise.all([r.pipeline(args), k.pipeline(args)]);
        group.forEach((c, i) => {
          if (!same(c, a[i]!, b[i]!) && differences.length < 50) {
            differences.push(`seed ${seed}: ${show(c.args)}\n  redis: ${JSON.stringify(a[i]!.toString('latin1'))}\n  pd3-kv: ${JSON.stringify(b[i]!.toString('latin1'))}`);
          }
        });
        done += group.length;
        sent += group.length;
      }
      r.close();
      k.close();
    }
    console.log(`pd3-kv vs redis-server: ${sent} commands, ${SEEDS} seeds, ${differences.length} differences`);
    expect(differences).toEqual([]);
  }, 600_000);
});
