// tenant-app.ts — one tenant's data system in the tenant phase of `npm run bench -- pool`
// (bench/pool/tenants.ts): a process on the host CPUs with a host segment, serving GETs over the
// tenant's records (examples/harness/tenant-kv-app.ts) behind its pd3-agent's tee proxy.
//
// Lines on stdout, one JSON object each: {"segment","port"} once the segment and the app's port
// exist (the driver then starts the agent); {"ready",...} once the records are written through the
// agent; {"probe":{code:count}} after a {"cmd":"probe","regions":[...]} line on stdin (a 64-byte
// read of each region, the other tenant's); {"counts":{...}} after {"cmd":"report"}, then it exits.
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { Pd3Error, Pd3Host } from '../../host/index.js';
import { TenantKvApp } from '../../examples/harness/tenant-kv-app.js';
import { writeTenantRecords } from '../../examples/harness/tenant-records.js';
import { TenantValues } from '../../examples/harness/tenant-values.js';

const { values: flags } = parseArgs({
  options: {
    tenant: { type: 'string', default: 'alpha' },
    keys: { type: 'string', default: '2000' },
    regions: { type: 'string', default: '6' },
    servers: { type: 'string', default: '3' },
    'delay-ms': { type: 'string', default: '15' },
    seed: { type: 'string', default: '' },
  },
});
const say = (o: object): boolean => process.stdout.write(`${JSON.stringify(o)}\n`);

const host = Pd3Host.create({ name: `pd3-pool-tenant-${flags.tenant}-${process.pid}`, replace: true, agentTimeoutMs: 2000 });
let app: TenantKvApp | null = null;
const server = createServer((socket) => {
  if (app === null) socket.destroy();
  else app.serve(socket);
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
say({ segment: host.name, port: (server.address() as { port: number }).port });

const deadline = Date.now() + 10_000;
while (!host.agentAlive()) {
  if (Date.now() > deadline) throw new Error(`tenant ${flags.tenant}: no agent attached within 10 s`);
  await new Promise((r) => setTimeout(r, 20));
}
const values = new TenantValues(flags.tenant, Number(flags.keys), flags.seed || undefined);
const started = Date.now();
const records = await writeTenantRecords(host, values, { regions: Number(flags.regions), servers: Number(flags.servers) });
app = new TenantKvApp(host, values, records, Number(flags['delay-ms']));
say({ ready: true, regions: records.regions.map((r) => r.region), servers: records.servers, bytes: records.bytes, ms: Date.now() - started });

for await (const line of createInterface({ input: process.stdin })) {
  const cmd = JSON.parse(line) as { cmd: string; regions?: number[] };
  if (cmd.cmd === 'probe') {
    const codes: Record<string, number> = {};
    for (const region of cmd.regions ?? []) {
      const code = await host.read(region, 0, 64).then(
        () => 'ok',
        (e: unknown) => (e instanceof Pd3Error ? e.code : String(e)),
      );
      codes[code] = (codes[code] ?? 0) + 1;
    }
    say({ probe: codes });
  } else if (cmd.cmd === 'report') {
    say({ counts: app.counts });
    break;
  }
}
server.close();
host.close();
process.exit(0);
