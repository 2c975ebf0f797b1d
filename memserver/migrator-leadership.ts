// migrator-leadership.ts — which memory server runs the pool's region migrator: the one holding
// PREFIX/migrator/leader, created only if absent, under a lease of its own. The holder keeps the
// lease alive; when it dies or is cut off the lease ends and another server started with
// --migrate on takes the key. A switch of a region's name compares this key's lease (RegionMove),
// so a server that lost the key cannot switch one. docs/pool.md "Moving hot regions".
import type { Etcd3, Lease } from 'etcd3';
import { ETCD_CALL_DEADLINE_MS } from '../common/pool-record.js';

/** The etcd key of the migrator's leader. */
export function migratorLeaderKey(prefix: string): string {
  return `${prefix === '/' ? '' : prefix}/migrator/leader`;
}

/** One server's candidacy for the migrator's leadership. */
export class MigratorLeadership {
  private lease: Lease | null = null;
  private leaseHex: string | null = null;

  constructor(
    private readonly client: Etcd3,
    private readonly prefix: string,
    private readonly serverId: number,
    private readonly ttlS: number,
  ) {}

  /** The leader key. */
  get key(): string {
    return migratorLeaderKey(this.prefix);
  }

  /** The lease id (as etcd's API writes it) the key is held under while this server leads, else null. */
  get leaseId(): string | null {
    return this.leaseHex;
  }

  /** Tries to lead (or checks it still does). Resolves whether this server leads now; rejects
   *  with etcd's error when it cannot be reached (then it does not lead). */
  async campaign(): Promise<boolean> {
    try {
      if (this.lease === null) {
        const lease = this.client.lease(this.ttlS, { deadline: Date.now() + ETCD_CALL_DEADLINE_MS });
        lease.on('lost', () => {
          if (this.lease === lease) this.drop();
        });
        this.lease = lease;
        this.leaseHex = null;
      }
      const lease = this.lease;
      const id = await lease.grant();
      const won = await this.client
        .if(this.key, 'Create', '==', 0)
        .then(this.client.put(this.key).value(JSON.stringify({ v: 1, serverId: this.serverId })).lease(id))
        .else(this.client.get(this.key))
        .commit();
      // Lost the race, or won it earlier: it leads while the key is under its lease.
      const holder = won.succeeded ? id : won.responses[0]?.response_range?.kvs[0]?.lease;
      this.leaseHex = holder === id ? id : null;
      return this.leaseHex !== null;
    } catch (e) {
      this.drop();
      throw e;
    }
  }

  /** Gives the leadership up: revokes the lease so another server takes over at once. */
  async resign(): Promise<void> {
    const lease = this.lease;
    this.lease = null;
    this.leaseHex = null;
    await lease?.revoke({ deadline: Date.now() + ETCD_CALL_DEADLINE_MS }).catch(() => {});
  }

  private drop(): void {
    this.lease?.release();
    this.lease = null;
    this.leaseHex = null;
  }
}
