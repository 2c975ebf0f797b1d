// reclaim-client.ts — the client of the reclamation phase of `npm run bench -- pool`
// (bench/pool/reclaim.ts): a process on the host CPUs that joins the pool as a tenant (a
// TenantSession: its own etcd lease), opens named regions through the host library's direct mode
// (directTenant, the tenant's credential in PD3_TOKEN), writes into each, and then holds its lease
// until it is killed — the driver kills it with -9 and times the reclamation.
//
// One line on stdout, a JSON object: {"ready":true,"segment","lease","regions":[{"name","region",
// "capacity","created"}]} once the regions are open and written.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Pd3Host, TenantSession } from '../../host/index.js';

const { values: flags } = parseArgs({
  options: {
    etcd: { type: 'string' },
    prefix: { type: 'string', default: '/pd3' },
    tenant: { type: 'string', default: 'gamma' },
    servers: { type: 'string' },
    regions: { type: 'string', default: '6' },
    bytes: { type: 'string', default: '1048576' },
    'lease-ttl': { type: 'string', default: '2' },
  },
});
if (flags.etcd === undefined || flags.servers === undefined) throw new Error('reclaim-client needs --etcd URL and --servers LIST');
const credential = process.env.PD3_TOKEN;
if (credential === undefined) throw new Error('reclaim-client needs the tenant credential in PD3_TOKEN');

const host = Pd3Host.create({
  name: `pd3-pool-reclaim-${flags.tenant}-${process.pid}`,
  replace: true,
  directOnly: true,
  directServers: flags.servers.split(','),
  directTenant: flags.tenant,
  directToken: credential,
});
const session = await TenantSession.open({
  endpoints: flags.etcd.split(','),
  prefix: flags.prefix,
  tenant: flags.tenant,
  leaseTtlS: Number(flags['lease-ttl']),
});
const regions = [];
for (let i = 0; i < Number(flags.regions); i++) {
  const r = await session.openRegion(host, `region-${i}`, Number(flags.bytes));
  await host.write(r.region, 0, randomBytes(Math.min(r.capacity, 64 << 10)));
  regions.push({ name: `region-${i}`, ...r });
}
process.stdout.write(`${JSON.stringify({ ready: true, segment: host.name, lease: await session.leaseId(), regions })}\n`);
// Holds the lease (the session's keep-alives) until killed.
setInterval(() => {}, 60_000);
