/**
 * The event sources' metrics, under `npu_fault_agent_`, registered once per registry (the
 * kmsg follower and the device-node watcher share it, and a test may build several).
 * Label values are bounded: `kind` is xid, aer or removed (device events) or one of
 * NODE_KERNEL_EVENT_KINDS (node events); `reason` one of KMSG_ERROR_REASONS (read errors) or
 * KMSG_IGNORED_REASONS (ignored records).
 */
import { Counter, type Metric } from 'prom-client';
import { metricPrefix, type Registry } from '../../platform/index.js';

/**
 * Why reading the kernel log failed: `open` (missing, unreadable, not a file, FIFO or
 * character device), `read` (a read failed after it opened), `overrun` (the kernel's ring
 * buffer overwrote records before they were read: EPIPE), `garbage` (a /dev/kmsg read that
 * was not a record).
 */
export const KMSG_ERROR_REASONS = ['open', 'read', 'overrun', 'garbage'] as const;
export type KmsgErrorReason = (typeof KMSG_ERROR_REASONS)[number];

/**
 * Why a kernel-log record was ignored (KernelLogScanner): `facility`, it is not the kernel's
 * (a /dev/kmsg record of a non-zero facility: user space wrote it; a text line that says so);
 * `fragment`, an older kernel's continuation fragment, which starts mid-message.
 */
export const KMSG_IGNORED_REASONS = ['facility', 'fragment'] as const;
export type KmsgIgnoredReason = (typeof KMSG_IGNORED_REASONS)[number];

/** The event sources' instruments. */
export interface EventMetrics {
  readonly kernelEvents: Counter<'kind'>;
  readonly kernelNodeEvents: Counter<'kind'>;
  readonly kmsgReadErrors: Counter<'reason'>;
  readonly kmsgSkipped: Counter;
  readonly kmsgIgnored: Counter<'reason'>;
  readonly deviceNodeRemovals: Counter;
  readonly deviceNodeWatchErrors: Counter;
}

/** The instruments in `registry`, registered on first use. */
export function eventMetrics(registry: Registry, component = 'agent'): EventMetrics {
  const prefix = metricPrefix(component);
  const registers = [registry];
  const once = <M extends Metric>(name: string, make: (name: string) => M): M =>
    (registry.getSingleMetric(`${prefix}${name}`) as M | undefined) ?? make(`${prefix}${name}`);
  return {
    kernelEvents: once(
      'kernel_events_total',
      (name) =>
        new Counter({
          name,
          help: 'Device events read from the kernel log, by kind (xid, aer, removed)',
          labelNames: ['kind'],
          registers,
        }),
    ),
    kernelNodeEvents: once(
      'kernel_node_events_total',
      (name) =>
        new Counter({
          name,
          help: 'Node-problem messages read from the kernel log, by kind (hung-task, soft-lockup, oom-kill, cgroup-oom-kill, fs-error, fs-readonly, machine-check)',
          labelNames: ['kind'],
          registers,
        }),
    ),
    kmsgReadErrors: once(
      'kmsg_read_errors_total',
      (name) =>
        new Counter({
          name,
          help: 'Kernel-log read failures by reason (open, read, overrun: records lost to the ring buffer, garbage)',
          labelNames: ['reason'],
          registers,
        }),
    ),
    kmsgSkipped: once(
      'kmsg_records_skipped_total',
      (name) =>
        new Counter({
          name,
          help: '/dev/kmsg records skipped as older than the follower (the ring buffer’s backlog at start)',
          registers,
        }),
    ),
    kmsgIgnored: once(
      'kmsg_records_ignored_total',
      (name) =>
        new Counter({
          name,
          help: 'Kernel-log records ignored as not the kernel’s own, by reason (facility: written by user space; fragment: an older kernel’s mid-message fragment)',
          labelNames: ['reason'],
          registers,
        }),
    ),
    deviceNodeRemovals: once(
      'device_node_removals_total',
      (name) =>
        new Counter({ name, help: 'Watched device nodes (davinciN, nvidiaN) that disappeared', registers }),
    ),
    deviceNodeWatchErrors: once(
      'device_node_watch_errors_total',
      (name) =>
        new Counter({
          name,
          help: 'Failures to watch or list the device-node directory (retried)',
          registers,
        }),
    ),
  };
}
