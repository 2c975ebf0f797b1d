// tenant-client.mjs — a client of one tenant in its own process, for the reclamation tests: joins the
// pool (TenantSession, its own lease), opens a named region in direct mode, reads what an earlier
// life left at offset 0, writes its own marker there, prints one JSON line, and then lives until it
// is killed or its stdin closes (then it leaves the pool cleanly).
// argv: etcdUrl prefix servers(host:port,...) tenant credential regionName marker leaseTtlS
import { Pd3Host, TenantSession } from '../../dist/host/index.js';

const [etcd, prefix, servers, tenant, credential, name, marker, ttl] = process.argv.slice(2);
const host = Pd3Host.create({
  name: `pd3-tc-${process.pid}`,
  directOnly: true,
  directServers: servers.split(','),
  directTenant: tenant,
  directToken: credential,
});
const session = await TenantSession.open({ endpoints: [etcd], prefix, tenant, leaseTtlS: Number(ttl) });
const region = await session.openRegion(host, name, 65536);
const before = (await host.read(region.region, 0, 32)).toString().replace(/\0+$/, '');
await host.write(region.region, 0, Buffer.from(marker.padEnd(32, '\0')));
process.stdout.write(`${JSON.stringify({ region: region.region, created: region.created, before })}\n`);
process.stdin.resume();
process.stdin.on('end', async () => {
  await session.close();
  host.close();
  process.exit(0);
});
