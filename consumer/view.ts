/**
 * From what a transport delivered to the view a follower hands out: the followed scope
 * (one node, or the cluster), its health, its failed devices, and a change key that leaves
 * out what moves without meaning a change (the heartbeat `timestamp`, and the readings
 * `observed_at`, `temperature_c`, `power_w`, as the agent's feed does). Pure.
 */
import type { DeviceStatus, PublishedDocument, PublishedNode } from '../contracts/index.js';
import type { FailedDevice, FollowedHealth, StatusUpdate, TransportKind } from './types.js';

const READINGS = new Set(['observed_at', 'temperature_c', 'power_w', 'timestamp']);
const SEVERITY: Record<DeviceStatus, number> = { healthy: 0, unknown: 1, degraded: 2, failed: 3 };

/** The view of a whole document, for `node` (or the cluster when null). */
export function viewOfDocument(
  document: PublishedDocument,
  node: string | null,
  transport: TransportKind,
  receivedAt: number,
): StatusUpdate {
  const entry = node === null ? null : (document.nodes[node] ?? null);
  const nodes = node === null ? document.nodes : entry ? { [node]: entry } : {};
  let health = healthOf(Object.values(nodes));
  if (node !== null && !entry && document.unobserved.includes(node)) health = 'unobserved';
  return {
    transport,
    node,
    health,
    entry,
    nodes,
    failed: failedIn(nodes),
    document,
    publisher: document.publisher,
    publishedAt: document.timestamp,
    receivedAt,
  };
}

/** The view of one node's entry as the agent serves it (null: healthy). */
export function viewOfEntry(
  input: {
    node: string;
    entry: PublishedNode | null;
    leader: string | null;
    term: number | null;
    updatedAt: string | null;
  },
  receivedAt: number,
): StatusUpdate {
  const nodes = input.entry ? { [input.node]: input.entry } : {};
  return {
    transport: 'sse',
    node: input.node,
    health: healthOf(Object.values(nodes)),
    entry: input.entry,
    nodes,
    failed: failedIn(nodes),
    document: null,
    publisher: input.leader === null ? null : { identity: input.leader, term: input.term ?? 0 },
    publishedAt: input.updatedAt,
    receivedAt,
  };
}

/** Equal keys: nothing a consumer acts on changed. */
export function changeKey(view: StatusUpdate): string {
  const unobserved = view.document?.unobserved ?? [];
  const scope = {
    nodes: view.nodes,
    health: view.health,
    ...(view.node === null
      ? { unobserved, summary: view.document?.cluster_summary, degraded: view.document?.ingest_degraded }
      : {}),
  };
  return JSON.stringify(scope, (name, value: unknown) => {
    if (READINGS.has(name)) return undefined;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
    return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

/** Identity of a failed device, for firing onDeviceFailed once per failure. */
export function failedId(failed: FailedDevice): string {
  return `${failed.node}\u0000${failed.device.key}`;
}

function healthOf(nodes: PublishedNode[]): FollowedHealth {
  let worst: DeviceStatus = 'healthy';
  for (const node of nodes)
    for (const device of node.npus) if (SEVERITY[device.status] > SEVERITY[worst]) worst = device.status;
  return worst;
}

function failedIn(nodes: Record<string, PublishedNode>): FailedDevice[] {
  const failed: FailedDevice[] = [];
  for (const [node, entry] of Object.entries(nodes))
    for (const device of entry.npus) if (device.status === 'failed') failed.push({ node, device });
  return failed;
}
