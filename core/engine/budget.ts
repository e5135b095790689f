/**
 * The published document's byte budget (CONTRACT §5.3). A document over `maxBytes` shrinks in
 * steps, each taken only while the document is still too large, in the order of what a reader
 * loses least:
 *
 * 1. signals: devices listed only for a signal (published healthy), every `signals` list and
 *    every `pods` list (who holds a device: the drain reads the engine's entry, never this
 *    document); a node left with nothing to list and no overlay is healthy, and not listed;
 * 2. on nodes with a device the state machine holds failed or degraded, every other device
 *    (counted in the node's `omitted_devices`);
 * 3. a fair share: every node lists at most the same number of devices (the most severe first:
 *    failed, then degraded), the largest number that fits, then one more for the most severe
 *    nodes while that fits, so that one node with many failures cannot push the others out.
 *    A node holding a failed or degraded device keeps at least one of them; when even that does
 *    not fit, whole nodes go, least severe first (`omitted_nodes`), and the share is taken
 *    again over those left.
 *
 * A listed node always keeps its `summary` (every device counted), so a node whose devices the
 * share left out still says how many are failed. Readings stay: the schema requires them (null
 * allowed), and a null is no shorter than a reading (`null` against `45.5`).
 */
import type { PublishedDevice, PublishedDocument, PublishedNode } from '../../contracts/index.js';
import { compareText, utf8Length } from './text.js';

/** Why an observed node that is not healthy is not listed. */
export type Withheld = 'ingest-outage' | 'size-budget';

/** A node entry the document lists, with what the budget needs to know about it. */
export interface Listed {
  name: string;
  entry: PublishedNode;
  /** Per listed device (in `entry.npus` order): 2 when the state machine holds it failed, 1 degraded, else 0. */
  holds: number[];
  /** The node's devices (listed or not) held failed or degraded. */
  held: number;
  /** The node's agent is unreachable. */
  stale: boolean;
  /** Any node overlay holds (the node is listed for it even with no device to list). */
  overlays: boolean;
}

/**
 * Shrinks `doc` (whose `nodes` are `listed`, in name order) until its compact JSON is at
 * most `maxBytes` of UTF-8, or nothing is left to cut; returns the names of the nodes cut.
 */
export function fitBudget(doc: PublishedDocument, listed: readonly Listed[], maxBytes: number): string[] {
  const base = utf8Length(JSON.stringify({ ...doc, nodes: {} }));
  let kept = [...listed];
  // Entry sizes, measured once and again only for the entries a step changes.
  const bytes = new Map<Listed, number>();
  let sum = 0;
  const measureEntry = (r: Listed): void => {
    const size = entryBytes(r);
    sum += size - (bytes.get(r) ?? 0);
    bytes.set(r, size);
  };
  for (const r of kept) measureEntry(r);
  const total = (): number => base + commas(kept.length) + sum;
  if (total() <= maxBytes) return [];

  for (const r of kept) {
    const signals = r.entry.npus.some(
      (device) => device.signals.length > 0 || device.status === 'healthy' || device.pods !== undefined,
    );
    if (!signals) continue;
    keepDevices(r, (device) => device.status !== 'healthy');
    for (const device of r.entry.npus) {
      device.signals = [];
      delete device.pods;
    }
    measureEntry(r);
  }
  kept = kept.filter((r) => {
    if (r.entry.npus.length > 0 || r.overlays) return true;
    sum -= bytes.get(r) ?? 0;
    return false;
  });
  if (total() > maxBytes)
    for (const r of kept) {
      if (r.held === 0 || r.holds.every((h) => h > 0)) continue;
      omitDevices(
        r,
        keepDevices(r, (_, holds) => holds > 0),
      );
      measureEntry(r);
    }
  const cut: string[] = [];
  if (total() > maxBytes) kept = share(kept, base, maxBytes, cut);

  doc.nodes = {};
  for (const r of kept) doc.nodes[r.name] = r.entry;
  if (cut.length > 0) doc.omitted_nodes = cut.length;
  return cut;
}

/** A kept entry measured for the share: its devices' sizes, most severe first. */
interface Measured {
  r: Listed;
  /** `"name":` and the entry with no device and no `omitted_devices`. */
  fixed: number;
  /** Device indexes (into entry.npus), most severe first, and their JSON sizes. */
  order: number[];
  sizes: number[];
  /** Devices the node must list while it is listed: one when it holds a failed or degraded one. */
  floor: number;
  /** Devices it lists at the share chosen. */
  count: number;
}

/**
 * Step 3: the fair share (see the file comment). Cuts nodes into `cut` while even their floors
 * do not fit; returns the entries kept, their devices trimmed to their shares.
 */
function share(kept: Listed[], base: number, maxBytes: number, cut: string[]): Listed[] {
  let measured = kept.map(measure);
  const bytesAt = (m: Measured, count: number): number => {
    const n = Math.min(m.sizes.length, count);
    let bytes = m.fixed + commas(n);
    for (let i = 0; i < n; i++) bytes += m.sizes[i] as number;
    const omitted = (m.r.entry.omitted_devices ?? 0) + m.sizes.length - n;
    return omitted > 0 ? bytes + utf8Length(`,"omitted_devices":${omitted}`) : bytes;
  };
  const documentAt = (list: readonly Measured[], counts: (m: Measured) => number): number => {
    const omitted = cut.length > 0 ? utf8Length(`,"omitted_nodes":${cut.length}`) : 0;
    return list.reduce((sum, m) => sum + bytesAt(m, counts(m)), base + omitted + commas(list.length));
  };

  // Whole nodes go, least severe first, only while the floors alone do not fit.
  if (documentAt(measured, (m) => m.floor) > maxBytes) {
    let floors = measured.reduce((sum, m) => sum + bytesAt(m, m.floor), 0);
    let count = measured.length;
    const size = (): number =>
      base + (cut.length > 0 ? utf8Length(`,"omitted_nodes":${cut.length}`) : 0) + commas(count) + floors;
    const gone = new Set<Measured>();
    for (const victim of [...measured].sort((x, y) => bySeverityAscending(x.r, y.r))) {
      if (size() <= maxBytes) break;
      gone.add(victim);
      cut.push(victim.r.name);
      floors -= bytesAt(victim, victim.floor);
      count--;
    }
    measured = measured.filter((m) => !gone.has(m));
  }

  // The largest common share that fits (each size grows with it), by bisection.
  let low = 0;
  let high = Math.max(0, ...measured.map((m) => m.sizes.length));
  const at = (s: number): number => documentAt(measured, (m) => Math.max(s, m.floor));
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (at(mid) <= maxBytes) low = mid;
    else high = mid - 1;
  }
  for (const m of measured) m.count = Math.max(low, m.floor);
  // One more for the most severe nodes while it fits: the share's slack is not wasted.
  let size = at(low);
  for (const m of [...measured].sort((a, b) => bySeverityAscending(b.r, a.r))) {
    if (m.count >= m.sizes.length) continue;
    const grown = size - bytesAt(m, m.count) + bytesAt(m, m.count + 1);
    if (grown > maxBytes) continue;
    m.count++;
    size = grown;
  }
  for (const m of measured)
    if (m.count < m.r.entry.npus.length) omitDevices(m.r, keepMostSevere(m.r, m.order, m.count));
  return measured.map((m) => m.r);
}

function measure(r: Listed): Measured {
  const { omitted_devices: _, ...rest } = r.entry;
  const order = r.entry.npus.map((_, i) => i).sort((a, b) => (r.holds[b] ?? 0) - (r.holds[a] ?? 0) || a - b);
  return {
    r,
    fixed: nameBytes(r) + utf8Length(JSON.stringify({ ...rest, npus: [] })),
    order,
    sizes: order.map((i) => utf8Length(JSON.stringify(r.entry.npus[i]))),
    floor: r.held > 0 && r.entry.npus.length > 0 ? 1 : 0,
    count: r.entry.npus.length,
  };
}

/** Bytes of an entry in the document: `"name":` and its JSON. */
function entryBytes(r: Listed): number {
  return nameBytes(r) + utf8Length(JSON.stringify(r.entry));
}

/** `"name":` of an entry's key. */
function nameBytes(r: Listed): number {
  return utf8Length(JSON.stringify(r.name)) + 1;
}

/** The commas between `n` items. */
function commas(n: number): number {
  return Math.max(0, n - 1);
}

/** Keeps the devices `keep` accepts (holds stay aligned); returns how many went. */
function keepDevices(
  r: Listed,
  keep: (device: PublishedDevice, holds: number, index: number) => boolean,
): number {
  const npus: PublishedDevice[] = [];
  const holds: number[] = [];
  r.entry.npus.forEach((device, i) => {
    const h = r.holds[i] ?? 0;
    if (!keep(device, h, i)) return;
    npus.push(device);
    holds.push(h);
  });
  const gone = r.entry.npus.length - npus.length;
  r.entry.npus = npus;
  r.holds = holds;
  return gone;
}

/** Keeps the first `count` of `order` (most severe first), in their listed (id) order; returns how many went. */
function keepMostSevere(r: Listed, order: readonly number[], count: number): number {
  const chosen = new Set(order.slice(0, count));
  return keepDevices(r, (_, __, i) => chosen.has(i));
}

/** Adds `gone` devices to the entry's `omitted_devices` (kept after `npus`). */
function omitDevices(r: Listed, gone: number): void {
  if (gone === 0) return;
  const { entry } = r;
  const omitted = (entry.omitted_devices ?? 0) + gone;
  delete entry.omitted_devices;
  entry.omitted_devices = omitted;
}

/** Least severe first: fewest failed, then degraded, then unknown, then listed devices; ties by name, last first. */
function bySeverityAscending(a: Listed, b: Listed): number {
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
