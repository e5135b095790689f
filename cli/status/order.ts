/**
 * The order a person reads the status in: worst first (failed > unknown > degraded >
 * healthy), then by name, naturally (`node-2` before `node-10`).
 */
import {
  entryHealth,
  STATUS_SEVERITY,
  type DeviceStatus,
  type PublishedDevice,
  type PublishedNode,
} from '../../contracts/index.js';

/** Worst first. */
const rank = (status: DeviceStatus): number => -STATUS_SEVERITY[status];

/** `node-2` before `node-10`. */
export function compareNatural(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true }) || (a < b ? -1 : a > b ? 1 : 0);
}

/** A listed node's status (from its counts over every device, listed or not: contracts' entryHealth). */
export function nodeStatus(node: PublishedNode): DeviceStatus {
  return entryHealth(node);
}

/** Nodes worst first, then by name. */
export function sortNodes(nodes: readonly PublishedNode[]): PublishedNode[] {
  return [...nodes].sort(
    (a, b) => rank(nodeStatus(a)) - rank(nodeStatus(b)) || compareNatural(a.node, b.node),
  );
}

/** Devices worst first, then by id. */
export function sortDevices(devices: readonly PublishedDevice[]): PublishedDevice[] {
  return [...devices].sort((a, b) => rank(a.status) - rank(b.status) || compareNatural(a.id, b.id));
}

/** A node needs attention when a device is not healthy or its agent is not ok. */
export function needsAttention(node: PublishedNode): boolean {
  return nodeStatus(node) !== 'healthy' || node.agent !== 'ok';
}
