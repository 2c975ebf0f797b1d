// tier-settings.ts — the settings of the memory server's SSD tier (docs/tier.md): --dram-budget,
// --page-size, --evict, --tier-prefetch, --tier-io, --mr-cache, and the checks that span several of them.
import { choice, size } from '../cli/settings.js';
import { UsageError } from '../cli/usage-error.js';

/** The eviction policies, prefetchers and I/O backends the native tier knows. */
export const EVICT_NAMES = ['lru', 'fifo', 'random', 'cflru', 'epoch'] as const;
export type EvictName = (typeof EVICT_NAMES)[number];
export const TIER_PREFETCH_NAMES = ['none', 'next-n', 'best-offset', 'leap'] as const;
export type TierPrefetchName = (typeof TIER_PREFETCH_NAMES)[number];
export const TIER_IO_NAMES = ['uring', 'threads'] as const;
export type TierIoName = (typeof TIER_IO_NAMES)[number];

const MIN_PAGE = 4096;
const MAX_PAGE = 2 * 1024 * 1024;
const DEFAULT_PAGE = 64 * 1024;

/** The tier's settings, by config key. */
export const TIER_SETTINGS = {
  dramBudget: size(1, 2 ** 50, {
    flag: 'dram-budget',
    help:
      'with --data-dir: keep regions in their files and at most SIZE bytes of their pages in DRAM ' +
      '(the SSD tier, docs/tier.md); at least one page',
    fallback: 'no tier: regions are mapped files',
  }),
  pageSize: size(MIN_PAGE, MAX_PAGE, {
    flag: 'page-size',
    help: "with --dram-budget: the tier's page, a power of two from 4K to 2M",
    fallback: '64K',
  }),
  evict: choice(EVICT_NAMES, {
    flag: 'evict',
    help: 'with --dram-budget: which page leaves DRAM when a frame is needed',
    fallback: 'lru',
  }),
  tierPrefetch: choice(TIER_PREFETCH_NAMES, {
    flag: 'tier-prefetch',
    help: 'with --dram-budget: which pages are read ahead of their first use',
    fallback: 'none',
  }),
  tierIo: choice(TIER_IO_NAMES, {
    flag: 'tier-io',
    help: 'with --dram-budget: how pages move between DRAM and the files (io_uring, or a pool of pread/pwrite threads)',
    fallback: 'uring where the kernel allows it, else threads',
  }),
  mrCache: size(0, 2 ** 50, {
    flag: 'mr-cache',
    help:
      "with --dram-budget: bytes of the registration cache (MRRC, docs/mrrc.md) the tier's frames are " +
      'registered through while they hold a page, capped to RLIMIT_MEMLOCK; 0 = frames are not registered',
    fallback: 'the DRAM budget',
  }),
};

/** Checked tier settings: what the native server takes. */
export interface TierOptions {
  dramBudget: number;
  pageSize: number;
  evict: EvictName;
  tierPrefetch: TierPrefetchName;
  /** Absent: io_uring, or threads where the kernel refuses io_uring. */
  tierIo?: TierIoName;
  /** Bytes of the frames' registration cache; absent: the DRAM budget; 0: no registration. */
  mrCache?: number;
}

/** The merged tier settings as parsed. */
export interface TierValues {
  dramBudget?: number | undefined;
  pageSize?: number | undefined;
  evict?: EvictName | undefined;
  tierPrefetch?: TierPrefetchName | undefined;
  tierIo?: TierIoName | undefined;
  mrCache?: number | undefined;
}

/** The tier's options, or undefined without --dram-budget. Throws UsageError for a budget without a
 *  data directory or below one page, a page size that is not a power of two, a registration cache
 *  below one page (other than 0), or tier flags without a budget. */
export function tierOptions(v: TierValues, dataDir: string | undefined): TierOptions | undefined {
  const pageSize = v.pageSize ?? DEFAULT_PAGE;
  if ((pageSize & (pageSize - 1)) !== 0) {
    throw new UsageError(`--page-size ${pageSize}: must be a power of two from 4K to 2M`);
  }
  if (v.dramBudget === undefined) {
    const stray = (['pageSize', 'evict', 'tierPrefetch', 'tierIo', 'mrCache'] as const).find((k) => v[k] !== undefined);
    if (stray !== undefined) throw new UsageError(`--${TIER_SETTINGS[stray].flag} needs --dram-budget`);
    return undefined;
  }
  if (dataDir === undefined) throw new UsageError('--dram-budget needs --data-dir (the tier keeps regions in files)');
  if (v.dramBudget < pageSize) {
    throw new UsageError(`--dram-budget ${v.dramBudget}: below one page (--page-size ${pageSize})`);
  }
  const out: TierOptions = {
    dramBudget: v.dramBudget,
    pageSize,
    evict: v.evict ?? 'lru',
    tierPrefetch: v.tierPrefetch ?? 'none',
  };
  if (v.tierIo !== undefined) out.tierIo = v.tierIo;
  if (v.mrCache !== undefined) {
    if (v.mrCache !== 0 && v.mrCache < pageSize) {
      throw new UsageError(`--mr-cache ${v.mrCache}: below one page (--page-size ${pageSize}); 0 turns registration off`);
    }
    out.mrCache = v.mrCache;
  }
  return out;
}
