/**
 * The local API's metrics, under `npu_fault_<component>_local_`. Labels are bounded: `path`
 * is one of the API's three paths or `other`, `code` an HTTP status, `reason` a fixed word.
 */
import { Counter, Gauge } from 'prom-client';
import { metricPrefix, type Registry } from '../../platform/index.js';

/** The local API's instruments. */
export interface LocalMetrics {
  /** `local_requests_total{path,code}`: answered requests (a stream counts when it opens). */
  readonly requests: Counter<'path' | 'code'>;
  /** `local_streams_refused_total{reason}`: full (maxClients reached) or stopping. */
  readonly streamsRefused: Counter<'reason'>;
  /** `local_streams_dropped_total{reason}`: slow (a client that stopped reading). */
  readonly streamsDropped: Counter<'reason'>;
}

/** Registers the metrics; `streams` is read at scrape time for `local_streams_open`. */
export function createLocalMetrics(
  registry: Registry,
  component: string,
  streams: () => number,
): LocalMetrics {
  const prefix = `${metricPrefix(component)}local_`;
  const registers = [registry];
  new Gauge({
    name: `${prefix}streams_open`,
    help: 'Open /v1/fault/stream connections (bounded by maxClients)',
    registers,
    collect() {
      this.set(streams());
    },
  });
  const streamsRefused = new Counter({
    name: `${prefix}streams_refused_total`,
    help: 'Stream requests refused with 503: full (maxClients open) or stopping',
    labelNames: ['reason'],
    registers,
  });
  const streamsDropped = new Counter({
    name: `${prefix}streams_dropped_total`,
    help: 'Streams the agent closed: slow (the client stopped reading)',
    labelNames: ['reason'],
    registers,
  });
  for (const reason of ['full', 'stopping']) streamsRefused.inc({ reason }, 0);
  streamsDropped.inc({ reason: 'slow' }, 0);
  return {
    requests: new Counter({
      name: `${prefix}requests_total`,
      help: 'Requests to the node-local API by path and status',
      labelNames: ['path', 'code'],
      registers,
    }),
    streamsRefused,
    streamsDropped,
  };
}
