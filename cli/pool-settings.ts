// pool-settings.ts — the settings that put a deployable in a memory pool run by etcd (--etcd,
// --etcd-prefix, --lease-ttl), shared by the deployables that take them. docs/pool.md.
import { checkPoolPrefix, DEFAULT_POOL_PREFIX } from '../common/pool-record.js';
import { checkTenantName } from '../common/tenant-record.js';
import { describeJson, integer, urlList, type Setting, type SettingText } from './settings.js';
import { UsageError } from './usage-error.js';

/** A key prefix for the pool's records in etcd. */
function poolPrefix(t: SettingText): Setting<string> {
  return {
    ...t,
    arg: t.arg ?? 'PREFIX',
    fromText: checkPoolPrefix,
    fromJson(value) {
      if (typeof value !== 'string') throw new Error(`must be a string, got ${describeJson(value)}`);
      return checkPoolPrefix(value);
    },
  };
}

/** A tenant name (1..64 of [A-Za-z0-9._-]). */
export function tenantName(t: SettingText): Setting<string> {
  return {
    ...t,
    arg: t.arg ?? 'NAME',
    fromText: checkTenantName,
    fromJson(value) {
      if (typeof value !== 'string') throw new Error(`must be a string, got ${describeJson(value)}`);
      return checkTenantName(value);
    },
  };
}


/** The pool's settings, by config key. */
export const POOL_SETTINGS = {
  etcd: urlList({
    flag: 'etcd',
    help: "the pool's etcd cluster (client URLs); without it the pool is the static --servers list",
  }),
  etcdPrefix: poolPrefix({
    flag: 'etcd-prefix',
    help: "with --etcd: the key prefix of the pool's records, so that pools can share one etcd",
    fallback: DEFAULT_POOL_PREFIX,
  }),
  leaseTtl: integer(2, 3600, {
    flag: 'lease-ttl',
    arg: 'S',
    help: "with --etcd: seconds this process's records outlive it (refreshed every third of that)",
    fallback: '10',
  }),
};

/** Where a deployable finds its pool: what POOL_SETTINGS build. */
export interface PoolOptions {
  endpoints: string[];
  prefix: string;
  leaseTtlS: number;
}

/** The pool options of merged settings: null without --etcd. Throws UsageError naming a pool flag
 *  given without --etcd. */
export function poolOptions(v: { etcd?: string[]; etcdPrefix?: string; leaseTtl?: number }): PoolOptions | null {
  if (v.etcd === undefined) {
    const stray = v.etcdPrefix !== undefined ? 'etcd-prefix' : v.leaseTtl !== undefined ? 'lease-ttl' : null;
    if (stray !== null) throw new UsageError(`--${stray} needs --etcd`);
    return null;
  }
  return { endpoints: v.etcd, prefix: v.etcdPrefix ?? DEFAULT_POOL_PREFIX, leaseTtlS: v.leaseTtl ?? 10 };
}
