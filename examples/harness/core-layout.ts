// core-layout.ts — which CPUs stand for which machine in a benchmark on one box. In a deployment
// the host's cores run the data system alone; the DPU, the memory servers and the clients are other
// silicon. Layout `split` keeps that apart here: the data system's processes on the host CPU set
// (default CPU 0), everything standing for other silicon — agent, memory servers, load generators,
// and the benchmark driver itself — on the remaining CPUs. Layout `shared` pins nothing (every
// process on every CPU). Pinning goes through `taskset` (util-linux); where it is missing, the OS
// refuses it, or there is one CPU, the layout falls back to shared and says why.
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** The layouts a benchmark can run with. */
export type LayoutName = 'split' | 'shared';

/** Which side of the deployment a process stands for. */
export type Side = 'host' | 'other';

/** A resolved layout: what runs where, for printing and results.json. */
export interface CoreLayout {
  readonly name: LayoutName;
  /** CPUs of the data system (split), or every CPU (shared). */
  readonly hostCpus: readonly number[];
  /** CPUs of the agent, memory servers and load generators (split), or every CPU (shared). */
  readonly otherCpus: readonly number[];
  /** Why the layout is not the one asked for, or ''. */
  readonly fallback: string;
}

/** The JSON form written into results: { name, host_cpus, other_cpus, fallback }. */
export function layoutRecord(layout: CoreLayout): Record<string, unknown> {
  return { name: layout.name, host_cpus: layout.hostCpus, other_cpus: layout.otherCpus, fallback: layout.fallback || null };
}

/** One line saying what runs where. */
export function describeLayout(layout: CoreLayout): string {
  if (layout.name === 'shared') {
    return `layout shared: every process on CPUs ${cpuList(layout.hostCpus)}${layout.fallback ? ` (${layout.fallback})` : ''}`;
  }
  return `layout split: data system on CPU ${cpuList(layout.hostCpus)}; agent, memory servers and load generators on CPU ${cpuList(layout.otherCpus)}`;
}

/** "0", "1-3", "0,2,4-5". */
export function cpuList(cpus: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < cpus.length; ) {
    let j = i;
    while (j + 1 < cpus.length && cpus[j + 1] === cpus[j]! + 1) j += 1;
    out.push(j === i ? String(cpus[i]) : `${cpus[i]}-${cpus[j]}`);
    i = j + 1;
  }
  return out.join(',');
}

/** Parses a CPU list like "0", "0,2" or "0-1"; throws with the reason on anything else. */
export function parseCpuList(text: string, what = '--host-cpus'): number[] {
  const cpus = new Set<number>();
  for (const part of text.split(',')) {
    const m = /^(\d{1,4})(?:-(\d{1,4}))?$/.exec(part.trim());
    if (!m) throw new Error(`${what}: expected CPU numbers like 0 or 0-1,3, got '${text}'`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (to < from) throw new Error(`${what}: range ${part} goes backwards`);
    for (let c = from; c <= to; c += 1) cpus.add(c);
  }
  return [...cpus].sort((a, b) => a - b);
}

/** The CPUs this process may run on (its affinity mask, Cpus_allowed_list in /proc/self/status). */
export function allowedCpus(): number[] {
  try {
    const m = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return parseCpuList(m[1]!, 'Cpus_allowed_list');
  } catch {
    // not Linux, or no /proc: every CPU the OS reports
  }
  return Array.from({ length: availableParallelism() }, (_, i) => i);
}

/** Resolves the layout asked for. `split` needs taskset, 2+ CPUs, host CPUs among those allowed and
 *  at least one CPU left for the rest; otherwise the result is `shared` with `fallback` saying why.
 *  In split it also pins this process (the benchmark driver, which talks to the apps like a client)
 *  to the other CPUs. */
export function resolveLayout(asked: LayoutName, hostCpus: readonly number[] = [0]): CoreLayout {
  const all = allowedCpus();
  const shared = (fallback: string): CoreLayout => ({ name: 'shared', hostCpus: all, otherCpus: all, fallback });
  if (asked === 'shared') return shared('');
  if (all.length < 2) return shared(`split needs 2 CPUs, this process may use ${all.length}`);
  const outside = hostCpus.filter((c) => !all.includes(c));
  if (outside.length > 0) return shared(`host CPU ${cpuList(outside)} is not among the allowed CPUs ${cpuList(all)}`);
  const other = all.filter((c) => !hostCpus.includes(c));
  if (other.length === 0) return shared(`host CPUs ${cpuList(hostCpus)} leave no CPU for the agent, servers and clients`);
  // Pin this process (every thread: -a) as a test that the OS allows pinning at all.
  const pin = spawnSync('taskset', ['-a', '-cp', cpuList(other), String(process.pid)], { encoding: 'utf8' });
  if (pin.error || pin.status !== 0) {
    const why = pin.error ? `taskset not usable (${pin.error.message}; Debian package util-linux)` : `taskset refused: ${(pin.stderr ?? '').trim()}`;
    return shared(why);
  }
  return { name: 'split', hostCpus: [...hostCpus], otherCpus: other, fallback: '' };
}

/** `file args` as run on `side` of the layout: through `taskset -c CPUS` in split, as is in shared. */
export function onSide(layout: CoreLayout, side: Side, file: string, args: readonly string[]): { file: string; args: string[] } {
  if (layout.name === 'shared') return { file, args: [...args] };
  const cpus = side === 'host' ? layout.hostCpus : layout.otherCpus;
  return { file: 'taskset', args: ['-c', cpuList(cpus), file, ...args] };
}

/** The layout of a process that was given none: shared, nothing pinned. */
export const SHARED: CoreLayout = Object.freeze({ name: 'shared', hostCpus: [], otherCpus: [], fallback: '' });

// The layout every process started through spawnOnSide follows: shared until a benchmark or the
// demo chooses one (useLayout).
let inForce: CoreLayout = SHARED;

/** Sets the layout of the processes started from now on. */
export function useLayout(layout: CoreLayout): void {
  inForce = layout;
}

/** The layout in force. */
export function currentLayout(): CoreLayout {
  return inForce;
}

/** Spawns `file args` on `side` of the layout in force. */
export function spawnOnSide(side: Side, file: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  const cmd = onSide(inForce, side, file, args);
  return spawn(cmd.file, cmd.args, options);
}

/** Pins this process (every thread) to `side` of the layout, for a benchmark whose own process is
 *  one of the parts (e.g. the client); says so, and that it runs unpinned, if taskset fails. */
export function pinThisProcess(layout: CoreLayout, side: Side, print: (line: string) => void = console.log): void {
  if (layout.name === 'shared') return;
  const cpus = side === 'host' ? layout.hostCpus : layout.otherCpus;
  const pin = spawnSync('taskset', ['-a', '-cp', cpuList(cpus), String(process.pid)], { stdio: 'ignore' });
  if (pin.status !== 0) print(`note: could not pin the bench process to CPUs ${cpuList(cpus)}; it runs unpinned`);
}

/** The --layout and --host-cpus options of a benchmark or the demo, for util.parseArgs. */
export const LAYOUT_OPTIONS = {
  layout: { type: 'string', default: 'split' },
  'host-cpus': { type: 'string', default: '0' },
} as const;

/** Their lines of a --help text. */
export const LAYOUT_USAGE = `  --layout split|shared split (default with 2+ CPUs): the data system on --host-cpus; the agent,
                        memory servers and clients on the other CPUs, as on separate machines;
                        shared: nothing pinned
  --host-cpus LIST      the data system's CPUs in split layout (default 0)`;

/** The parsed --layout and --host-cpus, checked; throws naming the flag. */
export function checkLayoutOptions(values: { layout?: string; 'host-cpus'?: string }): { layout: LayoutName; hostCpus: number[] } {
  const layout = values.layout ?? 'split';
  if (layout !== 'split' && layout !== 'shared') throw new Error(`--layout: split or shared, got '${layout}'`);
  return { layout, hostCpus: parseCpuList(values['host-cpus'] ?? '0') };
}

/** Checks the parsed --layout and --host-cpus (checkLayoutOptions), resolves the layout, puts it in
 *  force and prints what runs where (and why split fell back, if it did). */
export function applyLayoutOptions(values: { layout?: string; 'host-cpus'?: string }, print: (line: string) => void = console.log): CoreLayout {
  const { layout: asked, hostCpus } = checkLayoutOptions(values);
  const layout = resolveLayout(asked, hostCpus);
  useLayout(layout);
  print(describeLayout(layout));
  if (layout.fallback && asked === 'split') print(`note: split layout not possible (${layout.fallback}); running shared`);
  return layout;
}
