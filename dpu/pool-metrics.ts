// pool-metrics.ts — the agent's metric families of its pool membership (pd3-agent --etcd), from
// what its PoolWatch has seen (common/pool-watch.ts). docs/pool.md.
import type { MetricFamily } from '../cli/metrics.js';
import type { PoolWatchStats } from '../common/pool-watch.js';

/** pd3_agent_pool_*: members now, whether etcd is followed, and the changes counted. */
export function poolFamilies(s: PoolWatchStats): MetricFamily[] {
  const counter = (name: string, help: string, value: number): MetricFamily => ({
    type: 'counter',
    name: `pd3_agent_pool_${name}_total`,
    help,
    samples: [{ value }],
  });
  const gauge = (name: string, help: string, value: number): MetricFamily => ({
    type: 'gauge',
    name: `pd3_agent_pool_${name}`,
    help,
    samples: [{ value }],
  });
  return [
    gauge('members', 'Memory servers in the pool as the agent last saw it (new regions go only to these).', s.members),
    gauge('etcd_up', 'Whether the agent follows the membership in etcd now (1), or serves on with the last it knew (0).', s.etcdUp ? 1 : 0),
    counter('members_left', 'Members whose record went away (lease ended or revoked): no new region goes there.', s.left),
    counter('members_joined', 'Memory servers that registered after the agent started: it connects to each.', s.joined),
    counter('members_returned', 'Members that left and registered again: placeable again.', s.returned),
    counter('etcd_outages', 'Times etcd went out of reach or the watch broke.', s.outages),
    counter('bad_records', 'Malformed membership records skipped.', s.badRecords),
  ];
}
