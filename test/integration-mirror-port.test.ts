// integration-mirror-port.test.ts — prefetching through a mirror port, as on a DPU: clients in a
// network namespace reach the app over a veth pair whose traffic tc mirrors to a second veth
// (scripts/mirror-port.sh); pd3-agent captures the copy there with AF_PACKET or with DPDK's
// af_packet driver, never touching the app's own path. Real processes: pd3-memserver, pd3-agent,
// a client process in the namespace; the RESP app runs here. Also: the DPDK backend's refusals
// at start (exit 2 with the EAL's reason), its promiscuous state restored at exit, and a mirror
// port deleted under a running agent (reported and counted; the host is still served).
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { createServer, type Server, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { constants as C, type Pd3Host } from '../dist/host/index.js';
import { AGENT_CLI } from '../dist/examples/harness/processes.js';
import { addon } from '../dist/dpu/native.js';
import { Rig, allocateThroughAgent, kvRecord, logEvents, metric, sleep, waitUntil } from './integration-helpers.js';
import { reportSkip } from './optional-program.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SCRIPT = join(root, 'scripts', 'mirror-port.sh');
const CLIENT = join(root, 'test', 'workers', 'mirror-client.mjs');
const EAL = '--no-huge --no-pci --no-shconf -m 256 --no-telemetry';

const run = promisify(execFile);
const rig = new Rig();
afterEach(() => rig.teardown());

let serial = 0;
/** A mirror port of its own (scripts/mirror-port.sh), taken down at teardown; null (after one
 *  skip line) when this process may not create one. */
function mirrorPort(): { name: string; app: string; capture: string; subnet: string } | null {
  const name = `pd3m${process.pid % 10000}${serial++}`;
  const subnet = `10.214.${(process.pid + serial) % 250}`;
  const up = spawnSync(SCRIPT, ['up', name, subnet], { encoding: 'utf8' });
  if (up.status === 3) {
    reportSkip(`skipped: mirror-port tests (${up.stdout.trim()})`);
    return null;
  }
  rig.defer(() => execFileSync(SCRIPT, ['down', name]));
  if (up.status !== 0) throw new Error(`mirror-port.sh up failed: ${up.stderr}`);
  return { name, app: `${subnet}.1`, capture: `${name}p`, subnet };
}

/** A RESP GET app over Pd3Host whose records all live in remote memory: each GET is a miss,
 *  answered from the Loading Zone when the prefetch came first, else by a remote read. */
class App {
  zoneHits = 0;
  remoteReads = 0;
  readonly where = new Map<string, { offset: number; length: number }>();
  private readonly dest = Buffer.alloc(4096);
  constructor(private readonly host: Pd3Host, private readonly region: number) {}

  async flush(items: Array<[string, string]>): Promise<void> {
    let offset = 0;
    const page: Buffer[] = [];
    for (const [k, v] of items) {
      const rec = kvRecord(k, v);
      this.where.set(k, { offset: offset + C.SIZEOF_KV_HEADER + Buffer.byteLength(k), length: Buffer.byteLength(v) });
      page.push(rec);
      offset += rec.length;
    }
    await this.host.write(this.region, 0, Buffer.concat(page));
  }

  serve(socket: Socket): void {
    let pending = Buffer.alloc(0);
    let busy = Promise.resolve();
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      busy = busy.then(async () => {
        await sleep(5); // a busy server's queueing delay: the window the prefetch must beat
        for (;;) {
          const m = /^\*2\r\n\$3\r\nGET\r\n\$(\d+)\r\n/.exec(pending.toString('latin1'));
          if (m === null) return;
          const at = m[0].length;
          const n = Number(m[1]);
          if (pending.length < at + n + 2) return;
          const key = pending.toString('utf8', at, at + n);
          pending = pending.subarray(at + n + 2);
          socket.write(await this.get(key));
        }
      });
    });
  }

  private async get(key: string): Promise<string> {
    let v: string | null = null;
    const n = this.host.checkAndReturn(Buffer.from(key), this.dest);
    if (n > 0) {
      this.zoneHits++;
      v = this.dest.toString('utf8', 0, n);
    } else if (this.where.has(key)) {
      this.remoteReads++;
      const a = this.where.get(key)!;
      v = (await this.host.read(this.region, a.offset, a.length)).toString('utf8');
    }
    return v === null ? '$-1\r\n' : `$${Buffer.byteLength(v)}\r\n${v}\r\n`;
  }
}

/** The client process in the namespace: GETs `keys` one at a time, returns the values. */
async function clientGets(ns: string, app: string, port: number, keys: string[]): Promise<string[]> {
  const { stdout } = await run('ip', ['netns', 'exec', ns, process.execPath, CLIENT, app, String(port), ...keys], { timeout: 60_000 });
  return JSON.parse(stdout) as string[];
}

function promiscuous(iface: string): boolean {
  return /[<,]PROMISC[,>]/.test(execFileSync('ip', ['link', 'show', iface], { encoding: 'utf8' }));
}

/** Memory server, host segment, app listening on the mirror port's app address, agent with
 *  `mirrorArgs`; the app's records flushed. */
async function stack(port: NonNullable<ReturnType<typeof mirrorPort>>, mirrorArgs: string[]) {
  const token = randomBytes(16).toString('hex');
  const server = await rig.memserver({ token });
  const host = rig.host('mirror', { agentTimeoutMs: 1000 });
  let app: App | null = null;
  const appServer: Server = createServer((s) => app!.serve(s));
  rig.defer(() => appServer.close());
  const appPort = await new Promise<number>((r) => appServer.listen(0, port.app, () => r((appServer.address() as { port: number }).port)));
  const agent = await rig.agent(host.name, [server.port], token,
    ['--prefetch-parser', 'resp', '--app', `${port.app}:${appPort}`, '--metrics', '127.0.0.1:0', ...mirrorArgs]);
  await waitUntil(() => host.agentAlive(), 5000, 'agent heartbeat');
  const region = await allocateThroughAgent(host, 1 << 20);
  app = new App(host, region);
  const keys = Array.from({ length: 200 }, (_, i) => `user:${i}`);
  await app.flush(keys.map((k, i) => [k, `value-${i}`]));
  return { agent, host, app: app as App, appPort, keys, metrics: String(agent.ready.metrics) };
}

/** Clients in the namespace read every key: the values are right and most came from the zone. */
async function readThroughMirror(port: NonNullable<ReturnType<typeof mirrorPort>>, s: Awaited<ReturnType<typeof stack>>, label: string) {
  const values = await clientGets(port.name, port.app, s.appPort, s.keys);
  expect(values).toEqual(s.keys.map((_, i) => `value-${i}`));
  console.log(`${label}: ${s.app.zoneHits} of ${s.keys.length} GETs from the Loading Zone, ${s.app.remoteReads} remote reads`);
  expect(s.app.zoneHits / s.keys.length).toBeGreaterThanOrEqual(0.8);
  expect(await metric(s.metrics, 'pd3_agent_mirror_flows_total')).toBeGreaterThanOrEqual(1);
  expect(await metric(s.metrics, 'pd3_agent_mirror_capture_lag_total')).toBeGreaterThan(s.keys.length);
}

const dpdkBuiltIn = addon.dpdkBuiltIn;
function dpdkOrSkip(): boolean {
  if (!dpdkBuiltIn) reportSkip('skipped: DPDK mirror tests (pd3-agent was built without DPDK; Debian packages libdpdk-dev and pkg-config)');
  return dpdkBuiltIn;
}

describe('prefetching through a mirror port (tc mirred to a veth), clients in a namespace', () => {
  it('afpacket on the mirror port: most misses come from the Loading Zone', async () => {
    const port = mirrorPort();
    if (port === null) return;
    const s = await stack(port, ['--mirror', 'afpacket', '--mirror-interface', port.capture]);
    await readThroughMirror(port, s, 'afpacket mirror port');
  });

  it('dpdk (af_packet PMD) on the mirror port: zone hits; promiscuous restored at exit; a deleted port is reported while the host is served', async () => {
    if (!dpdkOrSkip()) return;
    const port = mirrorPort();
    if (port === null) return;
    expect(promiscuous(port.capture)).toBe(false);
    const vdev = `--vdev=net_af_packet0,iface=${port.capture},blocksz=32768,framesz=32768`;
    const s = await stack(port, ['--mirror', 'dpdk', `--dpdk-args=${EAL} ${vdev}`, '--dpdk-port', 'net_af_packet0']);
    expect(promiscuous(port.capture)).toBe(true);
    await readThroughMirror(port, s, 'dpdk mirror port');
    expect(await metric(s.metrics, 'pd3_agent_mirror_link_up')).toBe(1);
    // The mirror port goes away: reported (log + metric), capture stops, the host is still served.
    execFileSync('ip', ['link', 'del', `${port.name}m`]);
    await waitUntil(async () => (await metric(s.metrics, 'pd3_agent_mirror_link_downs_total')) >= 1, 5000, 'link down counted');
    expect(await metric(s.metrics, 'pd3_agent_mirror_link_up')).toBe(0);
    await waitUntil(() => logEvents(s.agent, 'dpdk.link_down').length > 0, 3000, 'link down logged');
    const again = await s.host.read(1, 0, 16).catch(async () => s.host.allocate(4096));
    expect(again).toBeTruthy();
    expect(s.host.agentAlive()).toBe(true);
    expect(await s.agent.stop(5000)).toBe(0);
  });

  it('dpdk: promiscuous mode is put back as it was when the agent exits', async () => {
    if (!dpdkOrSkip()) return;
    const port = mirrorPort();
    if (port === null) return;
    const vdev = `--vdev=net_af_packet0,iface=${port.capture}`;
    const s = await stack(port, ['--mirror', 'dpdk', `--dpdk-args=${EAL} ${vdev}`, '--dpdk-port', 'net_af_packet0']);
    expect(promiscuous(port.capture)).toBe(true);
    expect(await s.agent.stop(5000)).toBe(0);
    expect(promiscuous(port.capture)).toBe(false);
  });
});

describe('pd3-agent --mirror dpdk refuses what the EAL or the port refuse: exit 2 with the reason', () => {
  /** Runs pd3-agent to its end with the DPDK settings; returns its exit code and stderr. */
  function agentExit(dpdkArgs: string, dpdkPort: string): { status: number | null; stderr: string } {
    const host = rig.host('dpdkbad');
    const r = spawnSync(process.execPath, [AGENT_CLI, '--segment', host.name, '--servers', '127.0.0.1:1', '--metrics', 'off',
      '--prefetch-parser', 'resp', '--app', '127.0.0.1:6379', '--mirror', 'dpdk', `--dpdk-args=${dpdkArgs}`, '--dpdk-port', dpdkPort],
    { encoding: 'utf8', timeout: 60_000, env: { ...process.env, PD3_TOKEN: 'x' } });
    return { status: r.status, stderr: r.stderr };
  }

  it.runIf(!dpdkBuiltIn)('without DPDK built in: says so', () => {
    reportSkip('note: pd3-agent was built without DPDK; only its refusal is tested (Debian packages libdpdk-dev and pkg-config)');
    const r = agentExit(EAL, '0');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('pd3-agent was built without DPDK (install libdpdk-dev and rebuild)');
  });

  it.runIf(dpdkBuiltIn)('no hugepages, a vdev on a missing interface, a missing port, a bad framesz', () => {
    const noHuge = agentExit('--no-pci --no-shconf -m 64 --no-telemetry', '0');
    expect(noHuge.status).toBe(2);
    expect(noHuge.stderr).toMatch(/hugepage/i);
    const badVdev = agentExit(`${EAL} --vdev=net_af_packet0,iface=pd3nosuch0`, 'net_af_packet0');
    expect(badVdev.status).toBe(2);
    expect(badVdev.stderr).toMatch(/net_af_packet0/);
    const noPort = agentExit(`${EAL} --vdev=net_af_packet0,iface=lo`, 'net_nosuch9');
    expect(noPort.status).toBe(2);
    expect(noPort.stderr).toContain("no DPDK port named 'net_nosuch9' (ports: net_af_packet0 (0))");
    const badFrame = agentExit(EAL, 'net_af_packet1,iface=lo,framesz=32768');
    expect(badFrame.status).toBe(2);
    expect(badFrame.stderr).toMatch(/frame size exceeds block size/);
  });
});
