/**
 * The failover drill's transition check (bench/controller.ts `--failover`), pure: the status
 * changes a ConfigMap watcher saw in published documents, per (node, device), compared with
 * those `npu-fault replay` derives from the survivor's recorded observations.
 *
 * As test/controller.test.ts does after a leader kill: a device absent from a document is
 * healthy, the replay's first `unknown → healthy` is not a transition, and a published
 * non-healthy status is matched by its `since` (the replay's `at`). Unlike that test the
 * bench's faults come and go under load, so a replayed status that lasted at most one publish
 * interval may be merged away (the document shows only where it ended), and changes in the
 * replay's last interval may not have been published when the run stops.
 */
import type { PublishedDocument } from '../contracts/index.js';

/** One change of a device's status: to `status` at `at` (ms; replay: its `at`, published: `since`). */
export interface Step {
  status: string;
  reason: string | null;
  at: number;
  /** When the watcher saw it (published steps only). */
  seenAt?: number;
}

/** Transitions per `node/npuN`. */
export type Transitions = Map<string, Step[]>;

/**
 * What counts as a transition, alike for the published documents and the replay: a device
 * starts where nothing is known of it (the replay's `unknown`, the document's `unobserved`);
 * reaching healthy for the first time, or unknown before that, is its start, not a change.
 * From then on, and for any change to degraded or failed, every change counts.
 */
export class TransitionFilter {
  readonly #settled = new Set<string>();

  /** True when the change of `key` to `to` is a transition to compare. */
  counts(key: string, to: string): boolean {
    if (to === 'degraded' || to === 'failed') {
      this.#settled.add(key);
      return true;
    }
    if (this.#settled.has(key)) return true;
    if (to === 'healthy') this.#settled.add(key);
    return false;
  }
}

/** Where a device starts: its node has no snapshot yet. */
const UNOBSERVED = 'unobserved';

/** Follows published documents and records each device's status changes. */
export class PublishedTransitions {
  readonly steps: Transitions = new Map();
  readonly #last = new Map<string, string>();
  readonly #filter = new TransitionFilter();

  readonly #deviceIds: (node: string) => readonly string[];

  /** `devices`: how many per node (`npu0`…), or each node's device ids. */
  constructor(
    readonly nodes: readonly string[],
    devices: number | ((node: string) => readonly string[]),
  ) {
    const ids = typeof devices === 'number' ? Array.from({ length: devices }, (_, i) => `npu${i}`) : [];
    this.#deviceIds = typeof devices === 'number' ? () => ids : devices;
  }

  /**
   * A node the document calls `unobserved` has had no snapshot yet: its devices start there,
   * as they start `unknown` in the replay (TransitionFilter says what counts from there). A
   * device of a node neither listed nor unobserved is healthy.
   */
  observe(document: PublishedDocument, seenAt: number): void {
    const unobserved = new Set(document.unobserved ?? []);
    for (const node of this.nodes) {
      const devices = document.nodes[node]?.npus;
      for (const id of this.#deviceIds(node)) {
        const device = devices?.find((d) => d.id === id);
        const status = unobserved.has(node) ? UNOBSERVED : (device?.status ?? 'healthy');
        const key = `${node}/${id}`;
        const from = this.#last.get(key) ?? UNOBSERVED;
        if (status === from || status === UNOBSERVED) continue;
        this.#last.set(key, status);
        if (!this.#filter.counts(key, status)) continue;
        const since = device?.since === undefined ? Number.NaN : Date.parse(device.since);
        const step = {
          status,
          reason: device?.reason ?? null,
          at: Number.isNaN(since) ? seenAt : since,
          seenAt,
        };
        const list = this.steps.get(key);
        if (list) list.push(step);
        else this.steps.set(key, [step]);
      }
    }
  }
}

/** One line of `npu-fault replay` output. */
interface ReplayLine {
  at: string;
  node: string;
  npu: string;
  from: string;
  to: string;
  reason?: string | null;
}

/**
 * `npu-fault replay` output (one JSON line per change) as transitions. The replay prints
 * changes sorted by time, and a change caused by a snapshot that arrived late is stamped with
 * its collected_at, before an agent-unreachable change stamped at its deadline that the engine
 * made first: each device's changes are put back in the engine's order by chaining `from` to
 * the previous `to` (from `unknown`, where every device starts).
 */
export function parseReplay(stdout: string): Transitions {
  const byDevice = new Map<string, ReplayLine[]>();
  for (const line of stdout.split('\n')) {
    if (line.trim() === '') continue;
    const t = JSON.parse(line) as ReplayLine;
    const key = `${t.node}/${t.npu}`;
    const list = byDevice.get(key);
    if (list) list.push(t);
    else byDevice.set(key, [t]);
  }
  const steps: Transitions = new Map();
  const filter = new TransitionFilter();
  for (const [key, printed] of byDevice) {
    for (const t of engineOrder(printed)) {
      if (t.from === t.to || !filter.counts(key, t.to)) continue;
      const step = { status: t.to, reason: t.reason ?? null, at: Date.parse(t.at) };
      const list = steps.get(key);
      if (list) list.push(step);
      else steps.set(key, [step]);
    }
  }
  return steps;
}

/** One device's changes in the order the engine made them: each one's `from` the last one's `to`. */
function engineOrder(printed: readonly ReplayLine[]): ReplayLine[] {
  const left = [...printed];
  const ordered: ReplayLine[] = [];
  let current = 'unknown';
  while (left.length > 0) {
    const next = left.findIndex((t) => t.from === current);
    // No change leaves the current status: keep the printed order for the rest.
    const [t] = left.splice(next < 0 ? 0 : next, 1);
    ordered.push(t!);
    current = t!.to;
  }
  return ordered;
}

export interface Comparison {
  /** Replayed transitions published (the watcher saw them). */
  matched: number;
  /** Replayed transitions never published, not explained by the rules below. Expected 0. */
  lost: number;
  /** Published transitions the replay does not have (a status re-published, or invented). Expected 0. */
  duplicated: number;
  /** Replayed statuses that lasted at most one publish interval, merged away, with the change back. */
  merged: number;
  /** Replayed transitions wholly inside the leaderless gap (kill → the new leader's first document). */
  inLeaderlessGap: number;
  /** Replayed transitions in the last publish interval of the run (not yet published when it stopped). */
  pendingAtEnd: number;
  /** `lost` and `duplicated` by the status changed to (a lost `failed` is a lost fault). */
  lostByStatus: Record<string, number>;
  duplicatedByStatus: Record<string, number>;
  /** Up to 5 examples of lost and duplicated transitions, for the report. */
  examples: string[];
}

/**
 * Aligns, per device, the published steps with the replayed ones in order. A published step
 * matches the next replayed step of the same status that happened before it was seen (`slackMs`
 * for clocks and rounding); replayed steps skipped on the way are merged, in the gap, pending
 * or lost; a published step with no such match is duplicated.
 */
export function compareTransitions(
  published: Transitions,
  replayed: Transitions,
  options: { publishIntervalMs: number; gap?: { from: number; to: number }; endAt: number; slackMs?: number },
): Comparison {
  const result: Comparison = {
    matched: 0,
    lost: 0,
    duplicated: 0,
    merged: 0,
    inLeaderlessGap: 0,
    pendingAtEnd: 0,
    lostByStatus: {},
    duplicatedByStatus: {},
    examples: [],
  };
  const slack = options.slackMs ?? 1000;
  const example = (line: string): void => {
    if (result.examples.length < 5) result.examples.push(line);
  };
  for (const key of new Set([...published.keys(), ...replayed.keys()])) {
    const p = published.get(key) ?? [];
    const r = replayed.get(key) ?? [];
    let shown = 'healthy';
    let i = 0;
    const skip = (until: number): void => {
      for (; i < until; i++) {
        const step = r[i]!;
        const lasted = (r[i + 1]?.at ?? Number.POSITIVE_INFINITY) - step.at;
        const previous = r[i - 1];
        if (lasted <= options.publishIntervalMs) result.merged++;
        else if (step.status === shown && previous && step.at - previous.at <= options.publishIntervalMs)
          result.merged++; // the change back from a merged excursion
        else if (options.gap && step.at >= options.gap.from && step.at <= options.gap.to)
          result.inLeaderlessGap++;
        else if (step.at >= options.endAt - options.publishIntervalMs) result.pendingAtEnd++;
        else {
          result.lost++;
          result.lostByStatus[step.status] = (result.lostByStatus[step.status] ?? 0) + 1;
          example(`lost ${key} >${step.status} at ${new Date(step.at).toISOString()}`);
        }
      }
    };
    for (const step of p) {
      const seenAt = step.seenAt ?? step.at;
      let k = i;
      while (k < r.length && !(r[k]!.status === step.status && r[k]!.at <= seenAt + slack)) k++;
      if (k >= r.length || r[k]!.at > seenAt + slack) {
        result.duplicated++;
        result.duplicatedByStatus[step.status] = (result.duplicatedByStatus[step.status] ?? 0) + 1;
        example(`duplicated ${key} >${step.status} seen ${new Date(seenAt).toISOString()}`);
        shown = step.status;
        continue;
      }
      skip(k);
      result.matched++;
      shown = step.status;
      i = k + 1;
    }
    skip(r.length);
  }
  return result;
}
