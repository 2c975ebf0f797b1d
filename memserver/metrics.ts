// metrics.ts — pd3-memserver's metrics: native MemServerHandle stats and its batch-size
// histogram as Prometheus families.
import { cumulativeBuckets, type MetricFamily } from '../cli/metrics.js';
import { familiesFromStats, type StatMetric } from '../cli/stat-metrics.js';

const PREFIX = 'pd3_memserver';
const REQUESTS = 'Request records executed, by operation.';

/** Native stat → metric, for every stat the memory server reports. */
export const MEMSERVER_METRICS: readonly StatMetric[] = [
  { stat: 'reads', name: `${PREFIX}_requests_total`, type: 'counter', help: REQUESTS, labels: { op: 'read' } },
  { stat: 'writes', name: `${PREFIX}_requests_total`, type: 'counter', help: REQUESTS, labels: { op: 'write' } },
  { stat: 'prefetches', name: `${PREFIX}_requests_total`, type: 'counter', help: REQUESTS, labels: { op: 'prefetch' } },
  { stat: 'controls', name: `${PREFIX}_requests_total`, type: 'counter', help: REQUESTS, labels: { op: 'control' } },
  { stat: 'bytes_in', name: `${PREFIX}_received_bytes_total`, type: 'counter', help: 'Bytes read from clients.' },
  { stat: 'bytes_out', name: `${PREFIX}_sent_bytes_total`, type: 'counter', help: 'Bytes written to clients.' },
  { stat: 'frames', name: `${PREFIX}_frames_total`, type: 'counter', help: 'Request frames executed.' },
  { stat: 'records', name: `${PREFIX}_records_total`, type: 'counter', help: 'Request records executed.' },
  { stat: 'read_bytes', name: `${PREFIX}_read_bytes_total`, type: 'counter', help: 'Bytes read from regions.' },
  { stat: 'write_bytes', name: `${PREFIX}_write_bytes_total`, type: 'counter', help: 'Bytes written to regions.' },
  {
    stat: 'errors',
    name: `${PREFIX}_errors_total`,
    type: 'counter',
    help: 'Request records answered with a non-ok status.',
  },
  {
    stat: 'prefetch_not_found',
    name: `${PREFIX}_prefetch_not_found_total`,
    type: 'counter',
    help: 'Prefetch requests for a key the index does not hold.',
  },
  {
    stat: 'too_big_records',
    name: `${PREFIX}_too_big_records_total`,
    type: 'counter',
    help: "Records answered PD3_E_TOO_BIG: their response would not fit the frame's response budget.",
  },
  {
    stat: 'protocol_errors',
    name: `${PREFIX}_protocol_errors_total`,
    type: 'counter',
    help: 'Connections closed for a malformed frame or hello.',
  },
  {
    stat: 'auth_failures',
    name: `${PREFIX}_auth_failures_total`,
    type: 'counter',
    help: 'Hellos refused for a wrong token or tenant credential.',
  },
  {
    stat: 'tenant_refusals',
    name: `${PREFIX}_tenant_refusals_total`,
    type: 'counter',
    help: "Requests refused PD3_E_FORBIDDEN: they named another tenant's region.",
  },
  {
    stat: 'given_back_bytes',
    name: `${PREFIX}_given_back_bytes_total`,
    type: 'counter',
    help: 'Resident bytes of cold regions given back to the machine under memory pressure (--give-back).',
  },
  {
    stat: 'given_back_regions',
    name: `${PREFIX}_given_back_regions_total`,
    type: 'counter',
    help: 'Regions whose memory was given back (each time).',
  },
  {
    stat: 'file_reads',
    name: `${PREFIX}_file_reads_total`,
    type: 'counter',
    help: 'Reads of given-back regions that found part of their range only in the backing file.',
  },
  {
    stat: 'warm_hints',
    name: `${PREFIX}_warm_hints_total`,
    type: 'counter',
    help: "Cache lines of reads' and writes' bytes hinted into the cache ahead of their record (--warm-ahead).",
  },
  {
    stat: 'file_read_bytes',
    name: `${PREFIX}_file_read_bytes_total`,
    type: 'counter',
    help: 'Bytes of those reads that came from the file (page-granular).',
  },
  {
    stat: 'pressure_events',
    name: `${PREFIX}_pressure_events_total`,
    type: 'counter',
    help: 'Pressure checks that found MemAvailable under the headroom.',
  },
  {
    stat: 'tenants_reclaimed',
    name: `${PREFIX}_tenants_reclaimed_total`,
    type: 'counter',
    help: 'Tenants whose regions were reclaimed.',
  },
  {
    stat: 'reclaimed_regions',
    name: `${PREFIX}_reclaimed_regions_total`,
    type: 'counter',
    help: 'Regions freed because their tenant left the pool (lease gone past the grace period).',
  },
  {
    stat: 'reclaimed_bytes',
    name: `${PREFIX}_reclaimed_bytes_total`,
    type: 'counter',
    help: 'Bytes of the reclaimed regions.',
  },
  {
    stat: 'moved_refusals',
    name: `${PREFIX}_moved_refusals_total`,
    type: 'counter',
    help: 'Requests answered PD3_E_MOVED: their region was frozen or sealed by a move to another server.',
  },
  {
    stat: 'hello_timeouts',
    name: `${PREFIX}_hello_timeouts_total`,
    type: 'counter',
    help: 'Connections closed for not saying hello in time.',
  },
  {
    stat: 'sync_failures',
    name: `${PREFIX}_sync_failures_total`,
    type: 'counter',
    help: 'Frames whose writes could not be made durable (connection closed).',
  },
  { stat: 'syncs', name: `${PREFIX}_syncs_total`, type: 'counter', help: 'msync calls made for durability.' },
  {
    stat: 'record_parser_rejects',
    name: `${PREFIX}_record_parser_rejects_total`,
    type: 'counter',
    help:
      'parse_record answers of the record parser plug-in refused (a rule of pd3/parser.h broken, or an error ' +
      'status); their keys are neither indexed nor served.',
  },
  {
    stat: 'connections_total',
    name: `${PREFIX}_accepted_connections_total`,
    type: 'counter',
    help: 'Client connections admitted.',
  },
  {
    stat: 'refused_connections',
    name: `${PREFIX}_refused_connections_total`,
    type: 'counter',
    help: 'Client connections closed at once because --max-connections were open.',
  },
  {
    stat: 'read_pauses',
    name: `${PREFIX}_read_pauses_total`,
    type: 'counter',
    help: 'Times a connection had so many unsent responses that reading from it paused.',
  },
  {
    stat: 'frames_behind_sync',
    name: `${PREFIX}_frames_behind_sync_total`,
    type: 'counter',
    help:
      "Request frames run while an earlier frame of their connection waited for its writes' sync (the " +
      'SSD tier); their responses are held until it is done.',
  },
  ...tierMetric('hits', 'counter', 'Page accesses of the SSD tier that found the page in DRAM.'),
  ...tierMetric('misses', 'counter', 'Page accesses of the SSD tier that read the page from its file.'),
  ...tierMetric('evictions', 'counter', 'Pages the SSD tier dropped from DRAM to reuse their frame.'),
  ...tierMetric('writebacks', 'counter', 'Dirty pages the SSD tier wrote to their files.'),
  ...tierMetric('writeback_bytes', 'counter', 'Bytes the SSD tier wrote to its files (only the dirty range of each page).'),
  ...tierMetric('overwrites', 'counter', 'Page accesses of the SSD tier by a write covering the whole page: a frame taken, nothing read.'),
  ...tierMetric('fdatasyncs', 'counter', 'fdatasyncs of region and key index files the SSD tier completed (one per file per group commit, --sync batch).'),
  ...tierMetric('prefetches', 'counter', 'Pages the SSD tier read ahead of their first use.'),
  ...tierMetric('useless_prefetches', 'counter', 'Prefetched pages evicted before any use.'),
  ...tierMetric('io_errors', 'counter', "Failed reads and writes of the SSD tier's files (each is logged as tier.io_error)."),
  ...tierMetric('resident_pages', 'gauge', 'Pages of the SSD tier in DRAM.'),
  ...tierMetric('dirty_pages', 'gauge', 'Pages of the SSD tier in DRAM written since they were last written to their files.'),
  ...tierMetric('frames', 'gauge', "DRAM frames of the SSD tier (--dram-budget / --page-size)."),
  ...tierMetric('mr_hits', 'counter', "Frame fills of the SSD tier whose frame was still registered (MRRC hit)."),
  ...tierMetric('mr_misses', 'counter', 'Frame fills of the SSD tier that registered their frame (MRRC miss).'),
  ...tierMetric('mr_failures', 'counter', 'Frame fills of the SSD tier left unregistered (cache full of frames in use, RLIMIT_MEMLOCK).'),
  ...tierMetric('mr_pinned_bytes', 'gauge', "Bytes of the SSD tier's frames registered (pinned) now, in use or cached."),
  { stat: 'connections', name: `${PREFIX}_connections`, type: 'gauge', help: 'Client connections open.' },
  { stat: 'regions', name: `${PREFIX}_regions`, type: 'gauge', help: 'Regions allocated.' },
  { stat: 'allocated_bytes', name: `${PREFIX}_allocated_bytes`, type: 'gauge', help: 'Bytes allocated to regions.' },
  { stat: 'capacity', name: `${PREFIX}_capacity_bytes`, type: 'gauge', help: 'Bytes offered to regions in total.' },
  { stat: 'free_bytes', name: `${PREFIX}_free_bytes`, type: 'gauge', help: 'Bytes not allocated to regions.' },
  { stat: 'index_keys', name: `${PREFIX}_index_keys`, type: 'gauge', help: 'Keys in the key→address index.' },
  { stat: 'index_bytes', name: `${PREFIX}_index_bytes`, type: 'gauge', help: 'Bytes of the key→address index.' },
];

// The metric of the tier's stat `tier_<name>`: counters end in _total (reported only with a tier).
function tierMetric(name: string, type: 'counter' | 'gauge', help: string): StatMetric[] {
  const metric = `${PREFIX}_tier_${name}${type === 'counter' ? '_total' : ''}`;
  return [{ stat: `tier_${name}`, name: metric, type, help }];
}

/** Name of the batch-size histogram. */
export const MEMSERVER_BATCH_HISTOGRAM = `${PREFIX}_batch_records`;

/** Families of one scrape. `histogram` holds per-bucket counts of request frames by records per
 *  frame, for ≤1, ≤2, ≤4, … (powers of two), then one count of larger frames. */
export function memServerFamilies(
  stats: Readonly<Record<string, number>>,
  histogram: readonly number[],
): MetricFamily[] {
  const bounds = Array.from({ length: Math.max(0, histogram.length - 1) }, (_, i) => 2 ** i);
  const { buckets, count } = cumulativeBuckets(bounds, histogram);
  return [
    ...familiesFromStats(MEMSERVER_METRICS, stats, PREFIX),
    {
      type: 'histogram',
      name: MEMSERVER_BATCH_HISTOGRAM,
      help: 'Request frames by records per frame.',
      series: [{ buckets, count }],
    },
  ];
}
