// pool-servers.ts — a direct-mode host's memory servers from an etcd-run pool: the addresses of the
// members registered now, for Pd3Host.create's directServers (poolServers), and the membership
// followed from then on (PoolServers). docs/pool.md.
import { DEFAULT_POOL_PREFIX } from '../common/pool-record.js';
import type { PoolLog, PoolWatch, PoolWatchStats } from '../common/pool-watch.js';
import type { Pd3Host } from './pd3-host.js';

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
 *  cannot be read within its deadline, or no server is registered. The list is read once: to
 *  follow later changes, use PoolServers. */
export async function poolServers(options: PoolServersOptions): Promise<string[]> {
  // Loaded only here: an app that never joins a pool never loads the etcd client.
  const { openEtcd } = await import('../common/etcd-client.js');
  const { listPoolMembers } = await import('../common/pool-members.js');
  const prefix = options.prefix ?? DEFAULT_POOL_PREFIX;
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

/** Where PoolServers logs: cli's Logger fits (`new Logger('my-app')` from pd3/cli). */
export type PoolServersLog = PoolLog;

/** Options of PoolServers.open. */
export interface FollowPoolOptions {
  /** etcd client URLs. */
  endpoints: string[];
  /** Key prefix of the pool's records (default "/pd3"). */
  prefix?: string;
  /** Where members leaving, joining and returning, etcd outages and skipped records are logged
   *  (events pool.*, as the agent's); default: nowhere (stats() counts them). */
  logger?: PoolServersLog;
}

const SILENT: PoolLog = { debug() {}, info() {}, warn() {}, error() {} };

/** The pool's memory servers for a direct-mode host, followed in etcd: open() lists them, a host
 *  is created on `addresses`, and follow(host) hands it every later change (Pd3Host.setDirectMember)
 *  until close(). While etcd is out of reach the host keeps the last membership it was told, and
 *  catches up when etcd answers again. */
export class PoolServers {
  private following = false;

  private constructor(private readonly watch: PoolWatch) {}

  /** Lists the members registered now. Rejects with an Error naming the endpoints when etcd
   *  cannot be read, or the prefix when no member is registered. */
  static async open(options: FollowPoolOptions): Promise<PoolServers> {
    // Loaded only here: an app that never joins a pool never loads the etcd client.
    const { PoolWatch } = await import('../common/pool-watch.js');
    return new PoolServers(await PoolWatch.open({ endpoints: options.endpoints, prefix: options.prefix ?? DEFAULT_POOL_PREFIX },
      options.logger ?? SILENT));
  }

  /** "HOST:PORT" of the members registered at open(), by server id: Pd3Host.create's
   *  directServers, joined with commas. */
  get addresses(): string[] {
    return this.watch.members.map((m) => m.address);
  }

  /** Tells `host` (in direct mode) every member listed at open(), which it may have been created
   *  on already, then hands it every later change of the membership. Once; a second call does
   *  nothing. Throws what Pd3Host.setDirectMember throws for a listed member. */
  follow(host: Pd3Host): void {
    if (this.following) return;
    this.following = true;
    for (const address of this.addresses) host.setDirectMember(address, true);
    this.watch.follow({ setMember: (address, member) => host.setDirectMember(address, member) });
  }

  /** Members now, whether etcd is followed now, and the changes seen. */
  stats(): PoolWatchStats {
    return this.watch.stats();
  }

  /** Stops following (the host keeps the membership it was last told). Never rejects. Idempotent. */
  close(): Promise<void> {
    return this.watch.close();
  }
}
