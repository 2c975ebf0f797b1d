// cpu-meter.ts — CPU time each side of a run spends in its measured window: the data system (the
// host's CPU, what PD3 exists to save), the agent (the DPU's) and the memory server, read from
// /proc/PID/stat at the window's start and end.
import { readFileSync } from 'node:fs';

/** The processes of one run, by the silicon they stand for. */
export interface RunProcesses {
  /** The data system's process (the host). */
  host: number;
  /** The agent, if the mode has one (the DPU). */
  dpu?: number;
  /** The memory server (a remote machine). */
  memserver?: number;
}

/** CPU seconds each side used in a window, and how long the window was. */
export interface CpuWindow {
  seconds: number;
  host: number;
  dpu: number | null;
  memserver: number | null;
}

/** CPU seconds (user + system, all threads) a process has used so far; null once it is gone. */
export function cpuSeconds(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of proc(5))
    return ticks / 100; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
}

function sample(p: RunProcesses): { at: number; host: number | null; dpu: number | null; memserver: number | null } {
  return {
    at: performance.now(),
    host: cpuSeconds(p.host),
    dpu: p.dpu === undefined ? null : cpuSeconds(p.dpu),
    memserver: p.memserver === undefined ? null : cpuSeconds(p.memserver),
  };
}

const delta = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : b - a);

/** Measures the CPU of `p` from `startAfterMs` from now for `lengthMs` (the client's measured
 *  window, after its warm-up), while the caller's load runs. */
export function measureWindow(p: RunProcesses, startAfterMs: number, lengthMs: number): Promise<CpuWindow> {
  return new Promise((resolve, reject) => {
    setTimeout(() => {
      const a = sample(p);
      setTimeout(() => {
        const b = sample(p);
        const host = delta(a.host, b.host);
        if (host === null) {
          reject(new Error(`the data system (pid ${p.host}) exited during the measured window`));
          return;
        }
        resolve({ seconds: (b.at - a.at) / 1000, host, dpu: delta(a.dpu, b.dpu), memserver: delta(a.memserver, b.memserver) });
      }, lengthMs);
    }, startAfterMs);
  });
}

/** µs of CPU per operation: `cpuSeconds` over `ops` operations (null when either is unknown). */
export function usPerOp(cpu: number | null, ops: number): number | null {
  return cpu === null || !(ops > 0) ? null : (cpu * 1e6) / ops;
}
