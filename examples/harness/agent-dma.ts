// agent-dma.ts — what the agent's accesses to host memory cost in DMA operations, per client access
// it captured, from its metrics (pd3_agent_dma_operations_total, counted by the latency backend of
// --dma-latency-us; the shared-memory backend counts nothing).
import { metricsText, sample } from './scrape.js';

/** The agent's cumulative counters at one moment. */
export interface AgentDmaSample {
  reads: number;
  writes: number;
  atomics: number;
  fences: number;
  /** Client accesses the agent captured (reads, writes and deletes). */
  accesses: number;
}

/** DMA operations per captured client access between two samples, by kind. */
export interface DmaPerAccess {
  reads: number;
  writes: number;
  atomics: number;
  fences: number;
  total: number;
}

const DMA_KINDS = ['read', 'write', 'atomic', 'fence'] as const;
const ACCESS_OPS = ['read', 'write', 'delete'] as const;

/** Scrapes the agent whose metrics endpoint is `address`. */
export async function agentDmaSample(address: string): Promise<AgentDmaSample> {
  const text = await metricsText(address);
  const [reads, writes, atomics, fences] = DMA_KINDS.map((k) => sample(text, `pd3_agent_dma_operations_total{kind="${k}"}`)) as
    [number, number, number, number];
  const accesses = ACCESS_OPS.reduce((sum, op) => sum + sample(text, `pd3_agent_prefetch_accesses_total{op="${op}"}`), 0);
  return { reads, writes, atomics, fences, accesses };
}

/** Operations per access between `before` and `after`; null when the backend counted nothing (shared
 *  memory) or no access was captured. */
export function dmaPerAccess(before: AgentDmaSample, after: AgentDmaSample): DmaPerAccess | null {
  const accesses = after.accesses - before.accesses;
  const per = (k: keyof Omit<AgentDmaSample, 'accesses'>): number => (after[k] - before[k]) / accesses;
  if (accesses <= 0) return null;
  const r: DmaPerAccess = { reads: per('reads'), writes: per('writes'), atomics: per('atomics'), fences: per('fences'), total: 0 };
  r.total = r.reads + r.writes + r.atomics + r.fences;
  return r.total > 0 ? r : null;
}
