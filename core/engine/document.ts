/**
 * Renders the published fault.json document (CONTRACT §5) from the engine's state.
 *
 * - `nodes` holds every observed node with a device not healthy, a signal, or an overlay,
 *   and lists only those devices (sorted by display id, `npu2` before `npu10`);
 * - `unobserved` lists known nodes without a snapshot yet;
 * - when more than `fraction` (20%) of nodes, and at least `minNodes`, are stale at once
 *   (an ingest outage, not 200 broken nodes), the stale nodes whose devices the state
 *   machine holds healthy or unknown are not listed, and `ingest_degraded.stale_nodes` counts
 *   every stale node; a stale node with a device held failed or degraded stays listed, so an
 *   outage never turns a known failure into silence;
 * - beyond `maxBytes` (900 KiB of UTF-8) the document shrinks in steps (budget.ts), dropping
 *   signals and readings before any device, and any other device before a failed or
 *   degraded one; what it leaves out is counted (`omitted_devices` on a node, `omitted_nodes`
 *   on the document), so no reader can take it for healthy. It is never left unwritten.
 *
 * Node keys appear in name order, so equal state renders byte-identical documents.
 */
import {
  PUBLISHED_VERSION,
  type PublishedDevice,
  type PublishedDocument,
  type PublishedNode,
  type StatusSummary,
} from '../../contracts/index.js';
import type { PublisherInfo } from './api.js';
import { fitBudget, type Listed, type Withheld } from './budget.js';
import { AGENT_UNREACHABLE, agentState, firstOverlay, overlayNames, publishedStatus } from './overlays.js';
import { firstReason, holdingMask, reasonNames, signalMask, type ReasonTable } from './reasons.js';
import type { DeviceState, NodeState } from './state.js';
import { compareText } from './text.js';
import { formatTimestamp as iso } from './time.js';

export { compareText, utf8Length } from './text.js';

/** What the renderer needs. */
export interface DocumentInput {
  nodes: Iterable<NodeState>;
  /** Accelerator nodes declared to exist (for `unobserved` and `node_count`). */
  known: ReadonlySet<string>;
  table: ReasonTable;
  /** Stale fraction beyond which the document reports ingest_degraded... */
  degradedFraction: number;
  /** ...provided at least this many nodes are stale. */
  degradedMinNodes: number;
  /** Byte budget of the serialised document. */
  maxBytes: number;
  now: number;
  publisher: PublisherInfo;
}

/** A rendered document, and the observed nodes it leaves out although they are not healthy. */
export interface RenderedDocument {
  document: PublishedDocument;
  /** Node name → why it is not listed (an ingest outage, or the byte budget). */
  withheld: ReadonlyMap<string, Withheld>;
}

/** Renders the document; it always validates against contracts/published.ts. */
export function renderDocument(input: DocumentInput): RenderedDocument {
  const cluster = emptySummary();
  const rendered: Listed[] = [];
  const observed = new Set<string>();
  let stale = 0;
  for (const node of input.nodes) {
    if (Number.isNaN(node.lastSeen)) continue;
    observed.add(node.name);
    const isStale = (node.overlays & AGENT_UNREACHABLE) !== 0;
    if (isStale) stale++;
    const listed = renderListed(node, input.table, cluster);
    if (listed) rendered.push(listed);
  }
  const unobserved = [...input.known].filter((name) => !observed.has(name)).sort();
  const nodeCount = observed.size + unobserved.length;
  const ingestDegraded = stale >= input.degradedMinNodes && stale > input.degradedFraction * nodeCount;
  const withheld = new Map<string, Withheld>();
  const listed: Listed[] = [];
  for (const r of rendered) {
    // An outage summarises a stale node only when the state machine holds none of its devices
    // failed or degraded: what was known to be wrong stays listed.
    if (ingestDegraded && r.stale && r.held === 0) withheld.set(r.name, 'ingest-outage');
    else listed.push(r);
  }
  listed.sort((a, b) => compareText(a.name, b.name));

  const doc: PublishedDocument = {
    version: PUBLISHED_VERSION,
    timestamp: iso(input.now),
    publisher: { identity: input.publisher.identity, term: input.publisher.term },
    node_count: nodeCount,
    cluster_summary: cluster,
    unobserved,
    nodes: {},
  };
  for (const r of listed) doc.nodes[r.name] = r.entry;
  if (ingestDegraded) doc.ingest_degraded = { stale_nodes: stale };
  for (const name of fitBudget(doc, listed, input.maxBytes)) withheld.set(name, 'size-budget');
  return { document: doc, withheld };
}

/** One node's entry as the document would list it, or null when it would not be listed. */
export function renderNodeEntry(node: NodeState, table: ReasonTable): PublishedNode | null {
  return renderListed(node, table, emptySummary())?.entry ?? null;
}

/**
 * A node's entry with what the byte budget needs to know of each listed device (its `holds`:
 * 2 when the state machine holds it failed, 1 degraded, else 0), or null when the node would
 * not be listed. Adds the node's counts to `cluster`.
 */
function renderListed(node: NodeState, table: ReasonTable, cluster: StatusSummary): Listed | null {
  const summary = emptySummary();
  // Warning node reasons (rules `node_conditions`): a signal on every device of the node.
  const nodeSignals = node.overlays & ~table.nodes.overlay;
  const devices: { entry: PublishedDevice; holds: number }[] = [];
  let held = 0;
  for (const device of node.devices.values()) {
    const status = publishedStatus(device.state, node.overlays, table.nodes);
    summary.total++;
    summary[status]++;
    const holds = device.state === 'failed' ? 2 : device.state === 'degraded' ? 1 : 0;
    if (holds !== 0) held++;
    const signals = signalMask(table, device.state, device.active, device.causeCritical);
    if (status === 'healthy' && signals === 0 && nodeSignals === 0) continue;
    devices.push({ entry: renderDevice(device, node, table, status, signals), holds });
  }
  addSummary(cluster, summary);
  // Only a critical node reason lists a node by itself; a warning shows on its devices.
  const overlaid = (node.overlays & table.nodes.overlay) !== 0;
  if (devices.length === 0 && !overlaid) return null;
  // By display id, then key: a (dishonest) snapshot may give two devices one id.
  devices.sort(
    (a, b) =>
      compareText(a.entry.id, b.entry.id) ||
      (a.entry.key < b.entry.key ? -1 : a.entry.key > b.entry.key ? 1 : 0),
  );
  return {
    name: node.name,
    entry: {
      node: node.name,
      observed_at: iso(node.observedAt),
      agent: agentState(node.overlays, table.nodes),
      // The node's own reasons (CONTRACT §3.7), when any holds: one place to read them.
      ...(node.overlays === 0 ? {} : { reasons: overlayNames(node.overlays, table.nodes) }),
      summary,
      npus: devices.map((d) => d.entry),
    },
    holds: devices.map((d) => d.holds),
    held,
    stale: (node.overlays & AGENT_UNREACHABLE) !== 0,
    overlays: overlaid,
  };
}

function renderDevice(
  device: DeviceState,
  node: NodeState,
  table: ReasonTable,
  status: PublishedDevice['status'],
  signals: number,
): PublishedDevice {
  const byOverlay = status !== device.state;
  return {
    id: device.id,
    key: device.key,
    resource_id: device.resourceId,
    kind: device.kind,
    model: device.model,
    status,
    // Under an overlay the published status began with the change the overlay caused (or a
    // state change beneath it); otherwise it is the state machine's own state and its start.
    since: iso(byOverlay ? device.publishedSince : device.since),
    reason: publishedReason(device, node.overlays, table),
    reasons: [...reasonNames(table, device.active), ...overlayNames(node.overlays, table.nodes)],
    signals: [
      ...reasonNames(table, signals),
      ...overlayNames(node.overlays & ~table.nodes.overlay, table.nodes),
    ],
    temperature_c: device.temperature,
    power_w: device.power,
    ecc_errors: device.ecc,
    pcie_link_status: device.link,
    // Who holds it matters only to those it fails (the drain, a person reading explain).
    ...(status === 'healthy' || node.holders === null
      ? {}
      : { pods: [...(node.holders.get(device.resourceId) ?? [])] }),
  };
}

/**
 * The reason published with a device's status (and printed with its transitions). A
 * healthy device has none (its active reasons are `signals`); any other status carries the
 * reason that holds it there:
 * - `unknown` because of an overlay (an overlay never changes `failed`): the overlay;
 * - otherwise the first active reason that on its own holds the state (reasons.ts
 *   `holdingMask`: any reason for unknown/degraded, a critical one for failed);
 * - when none is active (a degraded device whose warning went quiet, waiting out its 5
 *   clean samples; a failed one after its link came back), the reason that put it there
 *   (`cause`), so a degraded device is never published without a reason.
 * The reason may therefore be one that is no longer in `reasons` (the active ones).
 */
export function publishedReason(device: DeviceState, node: number, table: ReasonTable): string | null {
  const { state } = device;
  // A warning node reason publishes nothing here: it changes no status (a signal, §3.7).
  const overlays = node & table.nodes.overlay;
  if (state === 'healthy' && overlays === 0) return null;
  // Not reached with a null `cause`: a device leaves `healthy` only through a state change
  // (which records it) and starts `unknown` only with a reason in its first sample.
  if (overlays !== 0 && state !== 'failed') return firstOverlay(overlays, table.nodes);
  return (
    firstReason(table, holdingMask(table, state, device.active)) ??
    device.cause ??
    firstReason(table, device.active) ??
    firstOverlay(overlays, table.nodes)
  );
}

function emptySummary(): StatusSummary {
  return { total: 0, healthy: 0, degraded: 0, failed: 0, unknown: 0 };
}

function addSummary(into: StatusSummary, add: StatusSummary): void {
  into.total += add.total;
  into.healthy += add.healthy;
  into.degraded += add.degraded;
  into.failed += add.failed;
  into.unknown += add.unknown;
}
