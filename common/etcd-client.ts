// etcd-client.ts — the etcd client every pool call goes through: each short call gives up after
// ETCD_CALL_DEADLINE_MS, so a dead endpoint never stalls the caller (watches, which live long, are
// opened without a default deadline: common/pool-watch.ts); and a call goes to etcd as soon as it
// is made, however many failed before it. docs/pool.md.
import { noop } from 'cockatiel';
import { Etcd3 } from 'etcd3';
import { ETCD_CALL_DEADLINE_MS } from './pool-record.js';

/** A client of the etcd cluster at `endpoints` whose calls each have a deadline; with
 *  `watches`, calls have none by default (a watch stream lives on; give each call its own).
 *
 *  The etcd3 client's default circuit breaker is off: after 3 failures in a row it would fail
 *  every call to a host for 5 s without trying it. Every caller here already retries on its own
 *  schedule (a member every 250 ms doubling up to a third of its lease TTL, a follower up to
 *  every 2 s), so the breaker only delays them past etcd's return: a member with a TTL under
 *  5 s then missed its first refresh after an etcd restart, lost its lease, and left the pool and
 *  came back (test/memserver-pool.test.ts). */
export function openEtcd(endpoints: string[], how: { watches?: boolean } = {}): Etcd3 {
  return new Etcd3({
    hosts: endpoints,
    dialTimeout: ETCD_CALL_DEADLINE_MS,
    faultHandling: { host: () => noop },
    ...(how.watches ? {} : { defaultCallOptions: () => ({ deadline: Date.now() + ETCD_CALL_DEADLINE_MS }) }),
  });
}
