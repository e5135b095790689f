/**
 * How every reader of the published document takes a node's health (CONTRACT §5.3), in one
 * place: the consumer SDK, `npu-fault status` and the tests of the Python example all follow
 * these rules, so they cannot disagree on the same document.
 *
 * - A listed node is as bad as the worst status its `summary` counts (failed, then unknown:
 *   nobody can vouch for it, then degraded), which covers devices the byte budget left out
 *   (`omitted_devices`); a node listed only for an overlay, with nothing worse counted, is
 *   `unknown`.
 * - A node in `unobserved` has not reported yet.
 * - Any other node is healthy, unless the document says it left nodes out (`ingest_degraded`
 *   during an ingest outage, `omitted_nodes` under the byte budget): then a node that is not
 *   listed is `unknown`, never `healthy`.
 */
import type { DeviceStatus, PublishedDocument, PublishedNode, StatusSummary } from './published.js';

/** A node's health as a reader must take it. */
export type NodeHealth = DeviceStatus | 'unobserved';

/** True when the document leaves out nodes that may not be healthy: a node not listed is then `unknown`. */
export function leavesNodesOut(
  document: Pick<PublishedDocument, 'ingest_degraded' | 'omitted_nodes'>,
): boolean {
  return document.ingest_degraded !== undefined || (document.omitted_nodes ?? 0) > 0;
}

/** How bad each status is, worst first: failed, unknown, degraded, healthy. */
export const STATUS_SEVERITY: Readonly<Record<DeviceStatus, number>> = {
  failed: 3,
  unknown: 2,
  degraded: 1,
  healthy: 0,
};

/** The worst status `summary` counts (STATUS_SEVERITY); healthy when none. */
export function worstCounted(summary: StatusSummary): DeviceStatus {
  if (summary.failed > 0) return 'failed';
  if (summary.unknown > 0) return 'unknown';
  return summary.degraded > 0 ? 'degraded' : 'healthy';
}

/** The health of a listed node. */
export function entryHealth(entry: PublishedNode): DeviceStatus {
  const worst = worstCounted(entry.summary);
  // Listed with nothing worse counted: listed for its agent or another overlay, or for signals.
  if (worst === 'healthy' && (entry.agent !== 'ok' || entry.npus.length === 0)) return 'unknown';
  return worst;
}

/** The health of `node` in `document`. */
export function nodeHealth(document: PublishedDocument, node: string): NodeHealth {
  const entry = Object.hasOwn(document.nodes, node) ? document.nodes[node] : undefined;
  if (entry !== undefined) return entryHealth(entry);
  if (document.unobserved.includes(node)) return 'unobserved';
  return leavesNodesOut(document) ? 'unknown' : 'healthy';
}

/** The cluster's health: the worst status `cluster_summary` counts, at least `unknown` when nodes were left out. */
export function clusterHealth(document: PublishedDocument): DeviceStatus {
  const worst = worstCounted(document.cluster_summary);
  return worst === 'healthy' && leavesNodesOut(document) ? 'unknown' : worst;
}

/**
 * True when `document` cannot show whether the device `key` of `node` is still failed: its
 * node was cut for the byte budget (`omitted_nodes`; an ingest outage never leaves out a node
 * holding a failed device), or its node is listed with more failed devices counted than listed
 * and the device is not among those listed. A reader keeps what it last knew of such a device
 * instead of taking it as recovered.
 */
export function hidesDevice(document: PublishedDocument, node: string, key: string): boolean {
  const entry = Object.hasOwn(document.nodes, node) ? document.nodes[node] : undefined;
  if (entry === undefined) return (document.omitted_nodes ?? 0) > 0 && !document.unobserved.includes(node);
  if (entry.npus.some((device) => device.key === key)) return false;
  return entry.summary.failed > entry.npus.filter((device) => device.status === 'failed').length;
}
