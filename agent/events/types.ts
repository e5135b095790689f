/**
 * The vocabulary of agent/events: what a kernel-log or device-node event says, and the shape
 * of the sources that report them (a Runnable that calls back per event).
 */
import type { AerSeverity, NodeKernelEventKind } from '../../core/parsers/index.js';

/** One device event: an NVIDIA XID, a PCIe AER error, or a device gone from the bus or /dev. */
export interface KernelEvent {
  kind: 'xid' | 'aer' | 'removed';
  /** Normalised PCI bus id (`0000:3B:00.0`) when the line names one; null otherwise. */
  busId: string | null;
  /** The XID number (kind xid). */
  xid?: number;
  /**
   * ISO time: the line's own when it carries an absolute one (dmesg -T, --time-format=iso),
   * else when the agent read it (/dev/kmsg records are read within milliseconds of being
   * written; their stamps count from boot, not the epoch).
   */
  at: string;
  /** The AER severity (kind aer). */
  severity?: AerSeverity;
  /** The kernel-log line, or for a removed device node its name (`davinci3`, `nvidia0`). */
  line: string;
}

/**
 * One node-problem message of the kernel (core/parsers kmsg-node.ts): a hung task, a locked-up
 * CPU, an OOM kill (of the node or of a cgroup), a filesystem error or read-only remount, a
 * machine check. The kernel check (agent/node-checks/kernel) holds them as node problems.
 */
export interface NodeKernelEvent {
  kind: NodeKernelEventKind;
  /** What it is about, printable and bounded: `python3:1234`, `CPU#3`, `sda1`, `0x1a2b3c`. */
  subject: string;
  /** What was seen, printable and bounded (`task python3:1234 blocked for more than 122 s`). */
  detail: string;
  /** ISO time: the line's own when it carries an absolute one, else when the agent read it. */
  at: string;
  /** The kernel-log line, cut to MAX_EVENT_LINE characters. */
  line: string;
}

/** Something that reports events as they happen (a Runnable: the agent runs it with the others). */
export interface EventSource {
  readonly name: string;
  /**
   * Runs until `signal` aborts, calling its onEvent once per event, then resolves. Never
   * rejects: a missing or unreadable source is logged, counted and retried with backoff.
   */
  start(signal: AbortSignal): Promise<void>;
}

/** Retry delays after a failure: doubling from initialMs up to maxMs, back to initialMs once a read works. */
export interface RetryOptions {
  initialMs: number;
  maxMs: number;
}

/** Default retry delays: soon enough for a log file that appears late, rare enough to stay quiet. */
export const DEFAULT_RETRY: RetryOptions = { initialMs: 1000, maxMs: 30_000 };
