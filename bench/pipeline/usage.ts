/**
 * What each process of the run costs, read from /proc (Linux) so the control plane's
 * processes are measured the same way as ours: CPU seconds (utime + stime of every thread),
 * peak resident memory, and the machine's busy share from /proc/stat. Node components also
 * report their event-loop delay through /metrics.
 */
import { readFileSync } from 'node:fs';
import type { ComponentUsage } from './result.js';

/** Reads a text file (readFileSync; a test passes its own). */
export type ReadText = (path: string, encoding: 'utf8') => string;
const readText: ReadText = (path) => readFileSync(path, 'utf8');

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux that matters). */
const TICKS_PER_SECOND = 100;

/** CPU seconds a process has used so far, or null once it is gone. */
export function processCpuSeconds(pid: number, read: ReadText = readText): number | null {
  try {
    const stat = read(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** Resident memory (bytes) of a process now, or null once it is gone. */
export function processRssBytes(pid: number, read: ReadText = readText): number | null {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(read(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Machine CPU counters (jiffies): idle (idle + iowait) and total. */
export function machineCpu(read: ReadText = readText): { idle: number; total: number } {
  const fields = (read('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  return { idle: (fields[3] ?? 0) + (fields[4] ?? 0), total: fields.reduce((a, b) => a + b, 0) };
}

/** One sample value (the first series of `name`, any labels) in a Prometheus exposition. */
export function metricValue(text: string, name: string): number | null {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return null;
}

/** The sum of every series of `name` whose labels contain each of `labels` (`key="value"`). */
export function metricSum(text: string, name: string, labels: readonly string[] = []): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (labels.every((l) => line.includes(l))) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** A process to account for. */
export interface Tracked {
  name: string;
  pid: number;
  /** Its /metrics URL and metric prefix, for the event-loop delay (Node components). */
  metrics?: { url: string; prefix: string };
}

/**
 * Samples the tracked processes (call `sample` about once a second) between `begin` and
 * `end`, and reports each one's usage over that window.
 */
export class UsageMeter {
  readonly #tracked: Tracked[];
  readonly #start = new Map<string, number>();
  readonly #peakRss = new Map<string, number>();
  readonly #lagMax = new Map<string, number>();
  #machineStart = { idle: 0, total: 0 };
  #startedAt = 0;

  constructor(tracked: Tracked[]) {
    this.#tracked = tracked;
  }

  begin(now = Date.now()): void {
    this.#startedAt = now;
    this.#machineStart = machineCpu();
    for (const t of this.#tracked) this.#start.set(t.name, processCpuSeconds(t.pid) ?? 0);
    this.#peakRss.clear();
    this.#lagMax.clear();
  }

  /** Peak RSS and event-loop delay; errors (a process gone) are skipped. */
  async sample(): Promise<void> {
    await Promise.all(
      this.#tracked.map(async (t) => {
        const rss = processRssBytes(t.pid);
        if (rss !== null) this.#peakRss.set(t.name, Math.max(this.#peakRss.get(t.name) ?? 0, rss));
        if (!t.metrics) return;
        try {
          const text = await (await fetch(t.metrics.url, { signal: AbortSignal.timeout(2000) })).text();
          const lag = metricValue(text, `${t.metrics.prefix}nodejs_eventloop_lag_p99_seconds`);
          if (lag !== null && Number.isFinite(lag))
            this.#lagMax.set(t.name, Math.max(this.#lagMax.get(t.name) ?? 0, lag));
        } catch {
          // A scrape that fails under load is a missing sample, not an error of the run.
        }
      }),
    );
  }

  end(now = Date.now()): { components: ComponentUsage[]; machineBusy: number; seconds: number } {
    const seconds = (now - this.#startedAt) / 1000;
    const machine = machineCpu();
    const busy =
      1 - (machine.idle - this.#machineStart.idle) / Math.max(1, machine.total - this.#machineStart.total);
    const components = this.#tracked.map((t): ComponentUsage => {
      const cpu = (processCpuSeconds(t.pid) ?? this.#start.get(t.name) ?? 0) - (this.#start.get(t.name) ?? 0);
      const lag = this.#lagMax.get(t.name);
      return {
        name: t.name,
        cpuSeconds: Number(cpu.toFixed(2)),
        cpuShareOfOneCore: Number((cpu / seconds).toFixed(3)),
        rssMiBPeak: Math.round((this.#peakRss.get(t.name) ?? 0) / 1048576),
        eventLoopDelayP99MsMax: lag === undefined ? null : Math.round(lag * 1000),
      };
    });
    return { components, machineBusy: Number(busy.toFixed(3)), seconds };
  }
}
