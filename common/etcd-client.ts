// etcd-client.ts — the etcd client every short pool call goes through: each call gives up after
// ETCD_CALL_DEADLINE_MS, so a dead endpoint never stalls the caller (watches, which live long, are
// opened without a default deadline: common/pool-watch.ts). docs/pool.md.
import { Etcd3 } from 'etcd3';
import { ETCD_CALL_DEADLINE_MS } from './pool-record.js';

/** A client of the etcd cluster at `endpoints` whose calls each have a deadline; with
 *  `watches`, calls have none by default (a watch stream lives on; give each call its own). */
export function openEtcd(endpoints: string[], how: { watches?: boolean } = {}): Etcd3 {
  return new Etcd3({
    hosts: endpoints,
    dialTimeout: ETCD_CALL_DEADLINE_MS,
    ...(how.watches ? {} : { defaultCallOptions: () => ({ deadline: Date.now() + ETCD_CALL_DEADLINE_MS }) }),
  });
}
