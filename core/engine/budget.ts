/**
 * The published document's byte budget (CONTRACT §5.3). A document over `maxBytes` shrinks in
 * steps, each taken only while the document is still too large, in order of what a reader
 * loses least:
 *
 * 1. signals: devices listed only for a signal (published healthy) and every `signals` list;
 *    a node left with nothing to list and no overlay is healthy, and not listed;
 * 2. on nodes with a device the state machine holds failed or degraded, every other device
 *    (counted in the node's `omitted_devices`);
 * 3. nodes holding no failed or degraded device, least severe first (`omitted_nodes`);
 * 4. a fair share: every remaining node lists at most the same number of devices, failed
 *    before degraded, the largest number that fits, so one node with many failures cannot push
 *    the others out (`omitted_devices`);
 * 5. whole nodes, least severe first (`omitted_nodes`).
 *
 * Readings stay: the schema requires them (null allowed), and a null is no shorter than a
 * reading (`null` against `45.5`), so blanking them would save nothing.
 *
 * Sizes are kept per entry and summed, so a step costs the entries it changes, not the
 * whole document again.
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
  const fit = new Fit(doc, listed);
  if (fit.total() <= maxBytes) return [];
  for (const step of STEPS) {
    step(fit, maxBytes);
    if (fit.total() <= maxBytes) break;
  }
  fit.write(doc);
  return fit.cut;
}

type Step = (fit: Fit, maxBytes: number) => void;

const STEPS: readonly Step[] = [
  function dropSignals(fit) {
    for (const r of fit.kept) {
      fit.change(r, (entry) => {
        keepDevices(r, (device) => device.status !== 'healthy');
        for (const device of entry.npus) device.signals = [];
      });
    }
    fit.remove(fit.kept.filter((r) => r.entry.npus.length === 0 && !r.overlays));
  },
  function dropUnheldDevices(fit) {
    for (const r of fit.kept) {
      if (r.held > 0)
        fit.change(r, () =>
          omitDevices(
            r,
            keepDevices(r, (_, holds) => holds > 0),
          ),
        );
    }
  },
  function cutUnheldNodes(fit, maxBytes) {
    fit.cutUntil(
      fit.kept.filter((r) => r.held === 0),
      maxBytes,
    );
  },
  function shareDevices(fit, maxBytes) {
    const share = largestShare(fit, maxBytes);
    for (const r of fit.kept) {
      if (r.entry.npus.length > share) fit.change(r, () => omitDevices(r, keepMostSevere(r, share)));
    }
  },
  function cutNodes(fit, maxBytes) {
    fit.cutUntil(fit.kept, maxBytes);
  },
];

/** The document's size as its entries change. */
class Fit {
  /** Listed entries still in, in name order. */
  kept: Listed[];
  /** Names of the nodes cut. */
  readonly cut: string[] = [];
  /** The document with no entries (the braces of `nodes` included). */
  readonly #base: number;
  /** Per kept entry: `"name":` and the entry's JSON. */
  readonly #bytes = new Map<Listed, number>();
  #sum = 0;
  /** Entries still in (kept.length, but also while cutUntil has yet to filter `kept`). */
  #count = 0;

  constructor(doc: PublishedDocument, listed: readonly Listed[]) {
    this.kept = [...listed];
    this.#base = utf8Length(JSON.stringify({ ...doc, nodes: {} }));
    for (const r of this.kept) this.#measure(r);
    this.#count = this.kept.length;
  }

  /** Bytes of the document as it would be written now. */
  total(): number {
    const omitted = this.cut.length > 0 ? utf8Length(`,"omitted_nodes":${this.cut.length}`) : 0;
    return this.#base + omitted + this.#sum + Math.max(0, this.#count - 1);
  }

  /** Applies `edit` to an entry and measures it again. */
  change(r: Listed, edit: (entry: PublishedNode) => void): void {
    this.#sum -= this.#bytes.get(r) ?? 0;
    edit(r.entry);
    this.#measure(r);
  }

  /** Takes entries out (nodes left with nothing to list, which are healthy: not counted as cut). */
  remove(entries: readonly Listed[]): void {
    if (entries.length === 0) return;
    const gone = new Set(entries);
    for (const r of gone) {
      this.#sum -= this.#bytes.get(r) ?? 0;
      this.#bytes.delete(r);
    }
    this.kept = this.kept.filter((r) => !gone.has(r));
    this.#count = this.kept.length;
  }

  /** Cuts `candidates`, least severe first, until the document fits. */
  cutUntil(candidates: readonly Listed[], maxBytes: number): void {
    const victims = [...candidates].sort(bySeverityAscending);
    const gone = new Set<Listed>();
    for (const victim of victims) {
      if (this.total() <= maxBytes) break;
      this.#sum -= this.#bytes.get(victim) ?? 0;
      this.#bytes.delete(victim);
      gone.add(victim);
      this.cut.push(victim.name);
      this.#count--;
    }
    if (gone.size > 0) this.kept = this.kept.filter((r) => !gone.has(r));
  }

  /** Writes the kept entries and the count of cut ones into `doc`. */
  write(doc: PublishedDocument): void {
    doc.nodes = {};
    for (const r of this.kept) doc.nodes[r.name] = r.entry;
    if (this.cut.length > 0) doc.omitted_nodes = this.cut.length;
  }

  /** Entry bytes with `share` devices kept (what shareDevices would make of it). */
  bytesWithShare(r: Listed, share: number, deviceBytes: readonly number[], head: number): number {
    const kept = Math.min(share, deviceBytes.length);
    let bytes = head + Math.max(0, kept - 1);
    for (let i = 0; i < kept; i++) bytes += deviceBytes[i] as number;
    const omitted = (r.entry.omitted_devices ?? 0) + deviceBytes.length - kept;
    if (omitted > 0) bytes += utf8Length(`,"omitted_devices":${omitted}`);
    return bytes + nameBytes(r);
  }

  #measure(r: Listed): void {
    const bytes = nameBytes(r) + utf8Length(JSON.stringify(r.entry));
    this.#bytes.set(r, bytes);
    this.#sum += bytes;
  }
}

/** `"name":` of an entry's key. */
function nameBytes(r: Listed): number {
  return utf8Length(JSON.stringify(r.name)) + 1;
}

/**
 * The most devices every node may list so that the document fits (0 when even none fits),
 * by bisection over the share: each entry's size grows with it.
 */
function largestShare(fit: Fit, maxBytes: number): number {
  const measured = fit.kept.map((r) => {
    const ordered = severeFirst(r).map((i) => r.entry.npus[i] as PublishedDevice);
    const head = utf8Length(JSON.stringify({ ...withoutOmitted(r.entry), npus: [] }));
    return { r, head, devices: ordered.map((d) => utf8Length(JSON.stringify(d))) };
  });
  const fixed = fit.total() - fit.kept.reduce((sum, r) => sum + entryBytesNow(r), 0);
  const sizeAt = (share: number): number =>
    measured.reduce((sum, m) => sum + fit.bytesWithShare(m.r, share, m.devices, m.head), fixed);
  let low = 0;
  let high = Math.max(0, ...measured.map((m) => m.devices.length));
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (sizeAt(mid) <= maxBytes) low = mid;
    else high = mid - 1;
  }
  return low;
}

function entryBytesNow(r: Listed): number {
  return nameBytes(r) + utf8Length(JSON.stringify(r.entry));
}

function withoutOmitted(entry: PublishedNode): PublishedNode {
  const { omitted_devices: _, ...rest } = entry;
  return rest;
}

/** Keeps the devices `keep` accepts (holds stay aligned); returns how many went. */
function keepDevices(r: Listed, keep: (device: PublishedDevice, holds: number) => boolean): number {
  const npus: PublishedDevice[] = [];
  const holds: number[] = [];
  r.entry.npus.forEach((device, i) => {
    const h = r.holds[i] ?? 0;
    if (!keep(device, h)) return;
    npus.push(device);
    holds.push(h);
  });
  const gone = r.entry.npus.length - npus.length;
  r.entry.npus = npus;
  r.holds = holds;
  return gone;
}

/** Keeps the `share` most severe devices (failed, then degraded, then by id), in id order. */
function keepMostSevere(r: Listed, share: number): number {
  const chosen = new Set(severeFirst(r).slice(0, share));
  let i = 0;
  return keepDevices(r, () => chosen.has(i++));
}

/** Indexes of an entry's devices, the most severe first, then in id order (their listed order). */
function severeFirst(r: Listed): number[] {
  return r.entry.npus.map((_, i) => i).sort((a, b) => (r.holds[b] ?? 0) - (r.holds[a] ?? 0) || a - b);
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
