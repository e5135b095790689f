/**
 * The filesystems check's metrics, under `npu_fault_agent_`, registered once per registry.
 * `source` is mounts (the mount table could not be read), garbage (its lines that are not
 * mountinfo lines) or stat (a path's stat or statfs failed other than by being absent).
 */
import { Counter, Gauge } from 'prom-client';
import type { Registry } from '../../../platform/index.js';
import { metricsIn } from '../metrics.js';

export const FILESYSTEM_READ_SOURCES = ['mounts', 'garbage', 'stat'] as const;
export type FilesystemReadSource = (typeof FILESYSTEM_READ_SOURCES)[number];

/** The filesystems check's instruments. */
export interface FilesystemMetrics {
  readonly readOnly: Gauge;
  readonly full: Gauge;
  readonly missing: Gauge;
  readonly waiting: Gauge;
  readonly timeouts: Counter;
  readonly readErrors: Counter<'source'>;
}

/** The instruments in `registry`, registered on first use. */
export function filesystemMetrics(registry: Registry): FilesystemMetrics {
  const { registers, once } = metricsIn(registry);
  const metrics: FilesystemMetrics = {
    readOnly: once(
      'filesystems_readonly',
      (name) =>
        new Gauge({
          name,
          help: 'Watched file systems read-only when they must not be (a problem)',
          registers,
        }),
    ),
    full: once(
      'filesystems_full',
      (name) => new Gauge({ name, help: 'Watched file systems full (a problem)', registers }),
    ),
    missing: once(
      'filesystem_paths_missing',
      (name) =>
        new Gauge({ name, help: 'Configured file system paths absent on the host (not checked)', registers }),
    ),
    waiting: once(
      'filesystem_paths_waiting',
      (name) =>
        new Gauge({
          name,
          help: 'Paths whose stat or statfs has not answered (a hung network file system); not looked at again until it does',
          registers,
        }),
    ),
    timeouts: once(
      'filesystem_stat_timeouts_total',
      (name) =>
        new Counter({
          name,
          help: 'Path looks (stat, statfs) that did not answer within statTimeoutMs',
          registers,
        }),
    ),
    readErrors: once(
      'filesystem_read_errors_total',
      (name) =>
        new Counter({
          name,
          help: 'Failed reads of the filesystems check by source (mounts: the mount table, garbage: its unreadable lines, stat: a path)',
          labelNames: ['source'],
          registers,
        }),
    ),
  };
  for (const source of FILESYSTEM_READ_SOURCES) metrics.readErrors.inc({ source }, 0);
  return metrics;
}
