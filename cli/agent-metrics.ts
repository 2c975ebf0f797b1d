// agent-metrics.ts — pd3-agent's metrics: native EngineHandle stats and per-server state as
// Prometheus families.
import type { NativeServerState } from '../host/native.js';
import type { MetricFamily } from './metrics.js';
import { familiesFromStats, type StatMetric } from './stat-metrics.js';

const PREFIX = 'pd3_agent';

/** Native stat (EngineStats field) → metric. */
export const AGENT_METRICS: readonly StatMetric[] = [
  {
    stat: 'batches',
    name: `${PREFIX}_batches_total`,
    type: 'counter',
    help: 'Passes over the request ring that took requests.',
  },
  { stat: 'records', name: `${PREFIX}_records_total`, type: 'counter', help: 'Request records taken from the host.' },
  {
    stat: 'frames_sent',
    name: `${PREFIX}_frames_sent_total`,
    type: 'counter',
    help: 'Request frames sent to memory servers.',
  },
  {
    stat: 'bytes_sent',
    name: `${PREFIX}_sent_bytes_total`,
    type: 'counter',
    help: 'Request bytes sent to memory servers.',
  },
  {
    stat: 'bytes_received',
    name: `${PREFIX}_received_bytes_total`,
    type: 'counter',
    help: 'Response bytes received from memory servers.',
  },
  {
    stat: 'responses',
    name: `${PREFIX}_responses_total`,
    type: 'counter',
    help: 'Response records published to the host.',
  },
  { stat: 'errors', name: `${PREFIX}_errors_total`, type: 'counter', help: 'Responses with a non-ok status.' },
  {
    stat: 'unavailable',
    name: `${PREFIX}_unavailable_total`,
    type: 'counter',
    help: 'Requests failed because their memory server was down or timed out.',
  },
  {
    stat: 'fenced',
    name: `${PREFIX}_fenced_total`,
    type: 'counter',
    help: 'Responses dropped because the host had already failed their requests.',
  },
  {
    stat: 'reconnects',
    name: `${PREFIX}_reconnects_total`,
    type: 'counter',
    help: 'Connections to memory servers after the first.',
  },
  {
    stat: 'host_view_inserts',
    name: `${PREFIX}_host_view_inserts_total`,
    type: 'counter',
    help: 'Keys inserted into Host View.',
  },
  {
    stat: 'host_view_erases',
    name: `${PREFIX}_host_view_erases_total`,
    type: 'counter',
    help: 'Keys erased from Host View.',
  },
  {
    stat: 'lz_invalidations',
    name: `${PREFIX}_lz_invalidations_total`,
    type: 'counter',
    help: 'Loading Zone items invalidated by writes.',
  },
  { stat: 'servers_up', name: `${PREFIX}_servers_up`, type: 'gauge', help: 'Memory servers connected.' },
  {
    stat: 'request_ring_bytes',
    name: `${PREFIX}_request_ring_bytes`,
    type: 'gauge',
    help: 'Request ring bytes published by the host and not yet taken.',
  },
  {
    stat: 'response_backlog',
    name: `${PREFIX}_response_backlog_records`,
    type: 'gauge',
    help: 'Response records waiting for room in the response ring.',
  },
  {
    stat: 'inflight_records',
    name: `${PREFIX}_inflight_records`,
    type: 'gauge',
    help: 'Request records sent to memory servers and not yet answered.',
  },
  { stat: 'host_view_keys', name: `${PREFIX}_host_view_keys`, type: 'gauge', help: 'Keys in Host View.' },
];

/** Families of one scrape. */
export function agentFamilies(
  stats: Readonly<Record<string, number>>,
  servers: readonly NativeServerState[],
): MetricFamily[] {
  const per = (s: NativeServerState, value: number): { labels: { server: string }; value: number } => ({
    labels: { server: s.endpoint },
    value,
  });
  return [
    ...familiesFromStats(AGENT_METRICS, stats, PREFIX),
    {
      type: 'gauge',
      name: `${PREFIX}_server_connected`,
      help: '1 while the agent is connected to the memory server.',
      samples: servers.map((s) => per(s, s.connected ? 1 : 0)),
    },
    {
      type: 'gauge',
      name: `${PREFIX}_server_capacity_bytes`,
      help: 'Bytes the memory server offers, as of its hello.',
      samples: servers.map((s) => per(s, s.capacity)),
    },
    {
      type: 'gauge',
      name: `${PREFIX}_server_free_bytes`,
      help: 'Bytes the memory server has free, as of its hello minus allocations since.',
      samples: servers.map((s) => per(s, s.freeBytes)),
    },
  ];
}
