// agent-metrics.ts — pd3-agent's metrics: native EngineHandle stats and per-server state as
// Prometheus families.
import type { NativeServerState } from './native.js';
import type { MetricFamily } from '../cli/metrics.js';
import { familiesFromStats, type StatMetric } from '../cli/stat-metrics.js';

const PREFIX = 'pd3_agent';

const ACCESSES = 'Client accesses the parser found in mirrored requests.';
const MIRROR = `${PREFIX}_mirror`;
const LEAD = 'Lead time (client READ captured → item in the Loading Zone) since start, by quantile (±3.2%).';
const LAG = "Capture lag (afpacket: the kernel's timestamp of a packet; dpdk: the rx burst call before the one that returned it → the capture thread hands it to the parser side) since start, by quantile (±3.2%).";

// Prefetching and the mirror (docs/prefetcher.md, docs/mirror.md say what each counts).
const PREFETCH_METRICS: readonly StatMetric[] = [
  { stat: 'prefetch_reads', name: `${PREFIX}_prefetch_accesses_total`, type: 'counter', help: ACCESSES, labels: { op: 'read' } },
  { stat: 'prefetch_writes', name: `${PREFIX}_prefetch_accesses_total`, type: 'counter', help: ACCESSES, labels: { op: 'write' } },
  { stat: 'prefetch_deletes', name: `${PREFIX}_prefetch_accesses_total`, type: 'counter', help: ACCESSES, labels: { op: 'delete' } },
  { stat: 'prefetch_host_view_hits', name: `${PREFIX}_prefetch_host_view_hits_total`, type: 'counter', help: 'Client READs of keys the host already held.' },
  { stat: 'prefetch_issued', name: `${PREFIX}_prefetch_requests_total`, type: 'counter', help: 'Prefetch requests sent to memory servers.' },
  { stat: 'prefetch_deduplicated', name: `${PREFIX}_prefetch_deduplicated_total`, type: 'counter', help: 'Client READs of a key whose prefetch was already in flight.' },
  { stat: 'prefetch_cancelled', name: `${PREFIX}_prefetch_cancelled_total`, type: 'counter', help: 'Prefetches cancelled by a client write, delete or host flush.' },
  { stat: 'prefetch_produced', name: `${PREFIX}_prefetch_produced_total`, type: 'counter', help: 'Items put into the Loading Zone.' },
  { stat: 'prefetch_not_found', name: `${PREFIX}_prefetch_not_found_total`, type: 'counter', help: 'Prefetches of keys no memory server holds.' },
  { stat: 'prefetch_lead_count', name: `${PREFIX}_prefetch_lead_total`, type: 'counter', help: 'Items whose lead time (capture → item in zone) was measured.' },
  { stat: 'prefetch_lead_sum_ns', name: `${PREFIX}_prefetch_lead_nanoseconds_total`, type: 'counter', help: 'Sum of the lead times (capture → item in zone).' },
  { stat: 'prefetch_lead_p50_ns', name: `${PREFIX}_prefetch_lead_nanoseconds`, type: 'gauge', help: LEAD, labels: { quantile: '0.5' } },
  { stat: 'prefetch_lead_p99_ns', name: `${PREFIX}_prefetch_lead_nanoseconds`, type: 'gauge', help: LEAD, labels: { quantile: '0.99' } },
  { stat: 'prefetch_dropped_accesses', name: `${PREFIX}_prefetch_dropped_accesses_total`, type: 'counter', help: 'Accesses lost to a full capture → engine queue.' },
  { stat: 'prefetch_lost_writes', name: `${PREFIX}_prefetch_lost_writes_total`, type: 'counter', help: 'WRITE/DELETE accesses lost to a full queue.' },
  { stat: 'prefetch_resets', name: `${PREFIX}_prefetch_resets_total`, type: 'counter', help: 'Times every zone item was withdrawn after a client write may have been missed.' },
  { stat: 'zone_consumed', name: `${PREFIX}_zone_consumed_total`, type: 'counter', help: 'Loading Zone items the host took (counted when the agent cleans them).' },
  { stat: 'zone_reclaimed_unconsumed', name: `${PREFIX}_zone_reclaimed_unconsumed_total`, type: 'counter', help: 'Loading Zone items reclaimed untaken because the zone was full.' },
  { stat: 'prefetch_hints', name: `${PREFIX}_prefetch_hints_total`, type: 'counter', help: 'Issuer host: prefetch hints handed to the host.' },
  { stat: 'prefetch_hints_returned', name: `${PREFIX}_prefetch_hints_returned_total`, type: 'counter', help: 'Issuer host: PREFETCH requests the host sent back for hints.' },
  { stat: 'prefetch_hints_expired', name: `${PREFIX}_prefetch_hints_expired_total`, type: 'counter', help: 'Issuer host: hints the host did not return in time.' },
  { stat: 'prefetch_hints_refused', name: `${PREFIX}_prefetch_hints_refused_total`, type: 'counter', help: 'PREFETCH requests from the host that matched no outstanding hint.' },
  { stat: 'mirror_packets', name: `${MIRROR}_packets_total`, type: 'counter', help: 'Captured packets read (afpacket, dpdk).' },
  { stat: 'mirror_bytes', name: `${MIRROR}_bytes_total`, type: 'counter', help: 'Client → app bytes handed to the parser.' },
  { stat: 'mirror_flows', name: `${MIRROR}_flows_total`, type: 'counter', help: 'Client connections seen.' },
  { stat: 'mirror_gaps', name: `${MIRROR}_gaps_total`, type: 'counter', help: 'Holes in a flow\'s byte stream (the parser resynced after each).' },
  { stat: 'mirror_parse_errors', name: `${MIRROR}_parse_errors_total`, type: 'counter', help: 'Requests the parser refused (the flow resynced).' },
  { stat: 'mirror_kernel_drops', name: `${MIRROR}_kernel_drops_total`, type: 'counter', help: 'Packets the kernel dropped on a full capture ring.' },
  { stat: 'mirror_polls', name: `${MIRROR}_polls_total`, type: 'counter', help: 'Times the capture thread found the ring empty and slept (afpacket: in poll(); dpdk: a back-off sleep).' },
  { stat: 'mirror_wakeups', name: `${MIRROR}_wakeups_total`, type: 'counter', help: 'Sleeps in poll() a captured packet ended.' },
  { stat: 'mirror_spins', name: `${MIRROR}_spins_total`, type: 'counter', help: 'afpacket: times the capture thread spun on an empty ring before sleeping (--mirror-spin-us); dpdk: rx bursts that returned nothing.' },
  { stat: 'mirror_spin_hits', name: `${MIRROR}_spin_hits_total`, type: 'counter', help: 'Spins a captured packet ended before the spin time ran out.' },
  { stat: 'mirror_duplicates', name: `${MIRROR}_duplicate_frames_total`, type: 'counter', help: 'Frames dropped as a second copy of the frame before (dpdk: af_packet on a loopback device sees each packet twice).' },
  { stat: 'mirror_truncated', name: `${MIRROR}_truncated_frames_total`, type: 'counter', help: 'Client frames the capture port cut short (dpdk: af_packet framesz); the rest became a gap.' },
  { stat: 'mirror_link_downs', name: `${MIRROR}_link_downs_total`, type: 'counter', help: 'Times the capture port went down or away (dpdk); the agent keeps serving the host meanwhile.' },
  { stat: 'mirror_link_up', name: `${MIRROR}_link_up`, type: 'gauge', help: 'Whether the capture port is up now (dpdk; 0 otherwise).' },
  { stat: 'mirror_cpu_ns', name: `${MIRROR}_cpu_nanoseconds_total`, type: 'counter', help: 'CPU time of the capture thread (read at most 50 ms ago).' },
  { stat: 'mirror_capture_lag_count', name: `${MIRROR}_capture_lag_total`, type: 'counter', help: 'Captured packets whose capture lag was measured.' },
  { stat: 'mirror_capture_lag_p50_ns', name: `${MIRROR}_capture_lag_nanoseconds`, type: 'gauge', help: LAG, labels: { quantile: '0.5' } },
  { stat: 'mirror_capture_lag_p99_ns', name: `${MIRROR}_capture_lag_nanoseconds`, type: 'gauge', help: LAG, labels: { quantile: '0.99' } },
];

const DMA = `${PREFIX}_dma`;
const DMA_OPS = 'Operations on host memory through the DMA interface, by kind (0 unless --dma-latency-us is set).';
const DMA_BYTES = 'Bytes moved to or from host memory through the DMA interface (0 unless --dma-latency-us is set).';
// Host memory through HostDma (docs/transfer-engine.md, "Host memory through DMA").
const DMA_METRICS: readonly StatMetric[] = [
  { stat: 'dma_reads', name: `${DMA}_operations_total`, type: 'counter', help: DMA_OPS, labels: { kind: 'read' } },
  { stat: 'dma_writes', name: `${DMA}_operations_total`, type: 'counter', help: DMA_OPS, labels: { kind: 'write' } },
  { stat: 'dma_atomics', name: `${DMA}_operations_total`, type: 'counter', help: DMA_OPS, labels: { kind: 'atomic' } },
  { stat: 'dma_fences', name: `${DMA}_operations_total`, type: 'counter', help: DMA_OPS, labels: { kind: 'fence' } },
  { stat: 'dma_wakes', name: `${DMA}_operations_total`, type: 'counter', help: DMA_OPS, labels: { kind: 'wake' } },
  { stat: 'dma_read_bytes', name: `${DMA}_bytes_total`, type: 'counter', help: DMA_BYTES, labels: { kind: 'read' } },
  { stat: 'dma_write_bytes', name: `${DMA}_bytes_total`, type: 'counter', help: DMA_BYTES, labels: { kind: 'write' } },
  { stat: 'dma_wait_ns', name: `${DMA}_wait_nanoseconds_total`, type: 'counter', help: 'Time the Transfer Engine waited for modelled DMA completions.' },
];

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
    stat: 'allocations_refused',
    name: `${PREFIX}_allocations_refused_total`,
    type: 'counter',
    help: 'ALLOCATE answers NOSPACE from a memory server (each retried where another may have room).',
  },
  {
    stat: 'placement_refraction_skips',
    name: `${PREFIX}_placement_refraction_skips_total`,
    type: 'counter',
    help: 'Allocations placed elsewhere because a server was in its refraction period after a NOSPACE.',
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
  ...PREFETCH_METRICS,
  ...DMA_METRICS,
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
      name: `${PREFIX}_server_placeable`,
      help: '1 while new regions may go to the memory server: 0 once it left the pool (--etcd).',
      samples: servers.map((s) => per(s, s.placeable ? 1 : 0)),
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
