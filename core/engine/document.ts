/**
 * Renders the published fault.json document (CONTRACT §3) from the engine's state.
 *
 * - `nodes` holds every observed node with a device not healthy, a signal, or an overlay,
 *   and lists only those devices (sorted by display id, `npu2` before `npu10`);
 * - `unobserved` lists known nodes without a snapshot yet;
 * - when more than `fraction` (20%) of nodes are stale at once, stale nodes are not listed
 *   and `ingest_degraded.stale_nodes` counts them (an ingest outage, not 200 broken nodes);
 * - beyond `maxBytes` (900 KiB of UTF-8), the least severe nodes are cut (fewest failed,
 *   then degraded, then unknown devices, then fewest listed devices; ties by name, last
 *   first) and counted in `omitted_nodes`; the document is never left unwritten.
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
import { AGENT_UNREACHABLE, agentState, firstOverlay, overlayNames, publishedStatus } from './overlays.js';
import { firstReason, holdingMask, reasonNames, signalMask, type ReasonTable } from './reasons.js';
import type { DeviceState, NodeState } from './state.js';
import { formatTimestamp as iso } from './time.js';

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

interface Rendered {
  name: string;
  entry: PublishedNode;
  stale: boolean;
}

/** Renders the document; it always validates against contracts/published.ts. */
export function renderDocument(input: DocumentInput): PublishedDocument {
  const cluster = emptySummary();
  const rendered: Rendered[] = [];
  const observed = new Set<string>();
  let stale = 0;
  for (const node of input.nodes) {
    if (Number.isNaN(node.lastSeen)) continue;
    observed.add(node.name);
    const isStale = (node.overlays & AGENT_UNREACHABLE) !== 0;
    if (isStale) stale++;
    const entry = renderNode(node, input.table, cluster);
    if (entry) rendered.push({ name: node.name, entry, stale: isStale });
  }
  const unobserved = [...input.known].filter((name) => !observed.has(name)).sort();
  const nodeCount = observed.size + unobserved.length;
  const ingestDegraded = stale >= input.degradedMinNodes && stale > input.degradedFraction * nodeCount;
  const listed = rendered
    .filter((r) => !(ingestDegraded && r.stale))
    .sort((a, b) => compareText(a.name, b.name));

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
  return fitBudget(doc, listed, input.maxBytes);
}

/** One node's entry as the document would list it, or null when it would not be listed. */
export function renderNodeEntry(node: NodeState, table: ReasonTable): PublishedNode | null {
  return renderNode(node, table, emptySummary());
}

function renderNode(node: NodeState, table: ReasonTable, cluster: StatusSummary): PublishedNode | null {
  const summary = emptySummary();
  const npus: PublishedDevice[] = [];
  for (const device of node.devices.values()) {
    const status = publishedStatus(device.state, node.overlays);
    summary.total++;
    summary[status]++;
    const signals = signalMask(table, device.state, device.active, device.causeCritical);
    if (status === 'healthy' && signals === 0) continue;
    npus.push(renderDevice(device, node, table, status, signals));
  }
  addSummary(cluster, summary);
  if (npus.length === 0 && node.overlays === 0) return null;
  npus.sort((a, b) => compareText(a.id, b.id));
  return {
    node: node.name,
    observed_at: iso(node.observedAt),
    agent: agentState(node.overlays),
    summary,
    npus,
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
    reasons: [...reasonNames(table, device.active), ...overlayNames(node.overlays)],
    signals: reasonNames(table, signals),
    temperature_c: device.temperature,
    power_w: device.power,
    ecc_errors: device.ecc,
    pcie_link_status: device.link,
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
export function publishedReason(device: DeviceState, overlays: number, table: ReasonTable): string | null {
  const { state } = device;
  if (state === 'healthy' && overlays === 0) return null;
  // Not reached with a null `cause`: a device leaves `healthy` only through a state change
  // (which records it) and starts `unknown` only with a reason in its first sample.
  if (overlays !== 0 && state !== 'failed') return firstOverlay(overlays);
  return (
    firstReason(table, holdingMask(table, state, device.active)) ??
    device.cause ??
    firstReason(table, device.active) ??
    firstOverlay(overlays)
  );
}

function fitBudget(doc: PublishedDocument, listed: Rendered[], maxBytes: number): PublishedDocument {
  let size = utf8Length(JSON.stringify(doc));
  if (size <= maxBytes) return doc;
  const victims = [...listed].sort(bySeverityAscending);
  let omitted = 0;
  doc.omitted_nodes = 0;
  size += 20; // `,"omitted_nodes":N` with room for the digits
  for (const victim of victims) {
    if (size <= maxBytes) break;
    size -= utf8Length(JSON.stringify(victim.entry)) + utf8Length(JSON.stringify(victim.name)) + 2;
    delete doc.nodes[victim.name];
    omitted++;
  }
  doc.omitted_nodes = omitted;
  return doc;
}

function bySeverityAscending(a: Rendered, b: Rendered): number {
  const x = a.entry.summary;
  const y = b.entry.summary;
  return (
    x.failed - y.failed ||
    x.degraded - y.degraded ||
    x.unknown - y.unknown ||
    a.entry.npus.length - b.entry.npus.length ||
    compareText(b.name, a.name)
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

/** Natural order: digit runs compare as numbers (`npu2` < `npu10`), then code-unit order. */
export function compareText(a: string, b: string): number {
  const re = /(\d+)|(\D+)/g;
  const pa = a.match(re) ?? [];
  const pb = b.match(re) ?? [];
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const x = pa[i] as string;
    const y = pb[i] as string;
    if (x === y) continue;
    const nx = /^\d/.test(x) && /^\d/.test(y) ? Number(x) - Number(y) : 0;
    if (nx !== 0) return nx;
    return x < y ? -1 : 1;
  }
  return pa.length - pb.length || (a < b ? -1 : a > b ? 1 : 0);
}

/** Bytes of a string in UTF-8, without encoding it. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
