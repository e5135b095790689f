/**
 * From what a transport delivered to the view a follower hands out: the followed scope
 * (one node, or the cluster), its health, its failed devices, and a change key that leaves
 * out what moves without meaning a change (the heartbeat `timestamp`, and the readings
 * `observed_at`, `temperature_c`, `power_w`, as the agent's feed does). Pure.
 *
 * Health follows the contract's reading rules (contracts/published-health.ts): a node the
 * document does not list is `unknown`, not healthy, when the document says it left nodes out.
 */
import {
  clusterHealth,
  entryHealth,
  hidesDevice,
  nodeHealth,
  type PublishedDocument,
  type PublishedNode,
} from '../contracts/index.js';
import type { FailedDevice, FollowedHealth, StatusUpdate, TransportKind } from './types.js';

const READINGS = new Set(['observed_at', 'temperature_c', 'power_w', 'timestamp']);

/** The view of a whole document, for `node` (or the cluster when null). */
export function viewOfDocument(
  document: PublishedDocument,
  node: string | null,
  transport: TransportKind,
  receivedAt: number,
): StatusUpdate {
  const entry = node === null ? null : Object.hasOwn(document.nodes, node) ? document.nodes[node]! : null;
  const nodes = node === null ? document.nodes : entry ? { [node]: entry } : {};
  const health = node === null ? clusterHealth(document) : nodeHealth(document, node);
  return {
    transport,
    node,
    health,
    entry,
    nodes,
    failed: failedIn(nodes),
    stale: false,
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
    /** The agent's answer is old (no answer from the function lately): only a failure in it still stands. */
    stale?: boolean;
  },
  receivedAt: number,
): StatusUpdate {
  const nodes = input.entry ? { [input.node]: input.entry } : {};
  const health: FollowedHealth = input.entry ? entryHealth(input.entry) : 'healthy';
  return {
    transport: 'sse',
    node: input.node,
    health: input.stale === true && health !== 'failed' ? 'unknown' : health,
    stale: input.stale === true,
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

/**
 * True when `view` cannot show whether `failed` is still failed (CONTRACT §5.3): its node or
 * the device was left out of the document, or the agent's answer is old. The follower keeps
 * such a device failed instead of taking it as recovered.
 */
export function cannotShow(view: StatusUpdate, failed: FailedDevice): boolean {
  if (view.node !== null && view.node !== failed.node) return false;
  if (view.document !== null) return hidesDevice(view.document, failed.node, failed.device.key);
  return view.stale;
}

function failedIn(nodes: Record<string, PublishedNode>): FailedDevice[] {
  const failed: FailedDevice[] = [];
  for (const [node, entry] of Object.entries(nodes))
    for (const device of entry.npus) if (device.status === 'failed') failed.push({ node, device });
  return failed;
}
