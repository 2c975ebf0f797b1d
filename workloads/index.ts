// index.ts — pd3/workloads: what it takes to evaluate a data system the way PD3's benchmarks do:
// seeded YCSB A–F streams (the same in TS and in native/workloads/ycsb.hpp) and Leap, the
// prefetching baseline the example apps run as their "leap" mode (docs/workloads.md).
export {
  createWorkload, Workload, formatKey, binaryKey, valueBytes, Zipfian, Xoshiro256, zeta, fnvMod,
  MAX_RECORDS, MAX_OPERATIONS, MAX_VALUE_SIZE, MAX_KEY_WIDTH,
} from './ycsb.js';
export type { WorkloadName, Distribution, OpName, YcsbOp, WorkloadOptions } from './ycsb.js';
export { LeapPrefetcher, LEAP_MAX_HISTORY, LEAP_MAX_WINDOW } from './leap.js';
export type { LeapOptions, LeapTrend, LeapDecision, LeapTrendResult } from './leap.js';
