// pool-servers.ts — a direct-mode host's memory servers from an etcd-run pool: the addresses of the
// members registered now, for Pd3Host.create's directServers. docs/pool.md.

/** Where the pool is. */
export interface PoolServersOptions {
  /** etcd client URLs. */
  endpoints: string[];
  /** Key prefix of the pool's records (default "/pd3"). */
  prefix?: string;
  /** Hears of each malformed membership record skipped (default: ignored). */
  onBadRecord?: (key: string, message: string) => void;
}

/** "HOST:PORT" of every memory server registered in the pool now, by server id. Rejects when etcd
 *  cannot be read within its deadline, or no server is registered. The list is read once: a host
 *  started from it does not follow later changes (an agent does). */
export async function poolServers(options: PoolServersOptions): Promise<string[]> {
  // Loaded only here: an app that never joins a pool never loads the etcd client.
  const { openEtcd } = await import('../common/etcd-client.js');
  const { listPoolMembers } = await import('../common/pool-members.js');
  const prefix = options.prefix ?? '/pd3';
  const client = openEtcd(options.endpoints);
  const warn = (_event: string, message: string, fields: { key: string }): void => options.onBadRecord?.(fields.key, message);
  let members;
  try {
    ({ members } = await listPoolMembers(client, prefix, { warn }));
  } catch (e) {
    throw new Error(`cannot read the pool's memory servers from etcd (${options.endpoints.join(', ')}): ${(e as Error).message}`);
  } finally {
    client.close();
  }
  if (members.length === 0) throw new Error(`no memory server is registered in the pool under ${prefix}`);
  return members.map((m) => m.address);
}
