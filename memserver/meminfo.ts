// meminfo.ts — what this machine's memory could still give the pool: MemAvailable from
// /proc/meminfo, less the headroom the machine keeps for itself (Dodo keeps 15%).
import { readFileSync } from 'node:fs';

/** The `MemAvailable` of a /proc/meminfo text, in bytes; null when the line is absent or bad. */
export function memAvailableBytes(meminfo: string): number | null {
  const m = /^MemAvailable:\s+(\d+) kB$/m.exec(meminfo);
  if (m === null) return null;
  const kib = Number(m[1]);
  return Number.isSafeInteger(kib * 1024) ? kib * 1024 : null;
}

/** Harvestable bytes: MemAvailable × (1 − headroom), rounded down; the same share of available
 *  memory the server leaves to its machine when it sizes itself (--headroom). */
export function harvestableBytes(availableBytes: number, headroom: number): number {
  return Math.max(0, Math.floor(availableBytes * (1 - headroom)));
}

/** This machine's harvestable bytes now, or null when /proc/meminfo cannot say. */
export function machineHarvestableBytes(headroom: number, path = '/proc/meminfo'): number | null {
  let text: string;
  try {
    text = readFileSync(path, 'latin1');
  } catch {
    return null;
  }
  const available = memAvailableBytes(text);
  return available === null ? null : harvestableBytes(available, headroom);
}
