/**
 * Which links are watched, which are down, gone or flapping: pure, fed one round of readings
 * at a time with the round's time.
 *
 * Watched links: the configured ones from the first read (up or not; one never seen is "not
 * present"), and the auto-detected ones from the first read that sees them up and eligible (a
 * fast physical NIC, any RDMA port, any NPU's RoCE port). A port that was never up since the
 * agent started (an uncabled spare) is not watched: it would be a problem forever. Once
 * watched, a link stays watched until the agent restarts, so one that disappears (a NIC that
 * fell off the bus, a driver that failed) is "gone", not forgotten.
 *
 * Flaps: each time a link goes down. The kernel's counters (carrier_down_count; else
 * carrier_changes, both directions; an RDMA port's link_downed) catch losses shorter than the
 * read interval; where they say less than what was seen (a counter the driver does not keep),
 * the observed up→down transitions count. A counter that goes back (a driver reload, an
 * interface re-created) starts a new baseline. A watched link with flapThreshold flaps within
 * the window is a problem even while it is up.
 *
 * A reading whose state is unknown (a file that could not be read, a failed hccn_tool run)
 * leaves the link's last known state in place, so a problem neither appears nor clears on a
 * failed read.
 */
import type { NodeProblem } from '../check.js';
import { joinProblemParts, nameOf, plural } from '../problem-message.js';

/** Where a link is read from: `nic` class/net, `rdma` class/infiniband, `hccn` hccn_tool. */
export type LinkKind = 'nic' | 'rdma' | 'hccn';
/** Every LinkKind, for metrics. */
export const LINK_KINDS: readonly LinkKind[] = ['nic', 'rdma', 'hccn'];

/** One link as read this round. */
export interface LinkReading {
  /** `eth2`, `mlx5_0/1`, `npu3`. */
  readonly id: string;
  readonly kind: LinkKind;
  /** Up now; undefined: present, but its state could not be read (the last known one holds). */
  readonly up: boolean | undefined;
  /** What was read, for messages (`operstate down, carrier 0`). */
  readonly seen: string;
  /** Whether auto-detection watches it once seen up. */
  readonly eligible: boolean;
  /** The device behind it (a NIC's PCI function, `0000:3b:00.0`), named when it is gone. */
  readonly device?: string;
  readonly speedMbps?: number;
  /** The kernel's count of the link's losses (carrier_down_count, link_downed). */
  readonly downs?: number;
  /** The kernel's count of carrier changes both ways (carrier_changes), where downs is not kept. */
  readonly transitions?: number;
}

/** One source's readings of a round. */
export interface LinkSource {
  readonly readings: readonly LinkReading[];
  /**
   * Whether a watched link the source no longer lists is gone (sysfs: yes), or keeps its last
   * state (hccn_tool: an NPU no longer listed is the device checks' business).
   */
  readonly absentIsGone: boolean;
}

/** What happened to a link, for the logs. */
export interface LinkEvent {
  readonly id: string;
  readonly kind: LinkKind;
  readonly what: 'watched' | 'down' | 'up' | 'gone' | 'back' | 'flapping' | 'steady';
  readonly detail: string;
}

/** A round's outcome. */
export interface LinkVerdict {
  readonly problems: readonly NodeProblem[];
  readonly events: readonly LinkEvent[];
  /** Watched links, and those of them down or gone, by kind. */
  readonly watched: Readonly<Record<LinkKind, number>>;
  readonly down: Readonly<Record<LinkKind, number>>;
  /** Flaps counted this round, by kind (watched links only). */
  readonly flaps: Readonly<Record<LinkKind, number>>;
}

/** What the tracker is told once. */
export interface LinkTrackerOptions {
  /** Watched from the first read: NIC names, RDMA `dev` or `dev/port`, hccn ids (`npu0`). */
  readonly configured: Readonly<Record<LinkKind, readonly string[]>>;
  readonly flapThreshold: number;
  readonly flapWindowMs: number;
}

interface LinkState {
  readonly id: string;
  readonly kind: LinkKind;
  watched: boolean;
  present: boolean;
  up: boolean | undefined;
  seen: string;
  device: string | undefined;
  downs: number | undefined;
  transitions: number | undefined;
  /** When each flap within the window was counted. */
  flapTimes: number[];
  flapping: boolean;
}

/** A link's flap times are kept up to this many: far past any threshold. */
const MAX_FLAP_TIMES = 1000;

const REASON: Record<LinkKind, NodeProblem['reason']> = {
  nic: 'nic-link-down',
  rdma: 'rdma-port-down',
  hccn: 'rdma-port-down',
};

function zeroes(): Record<LinkKind, number> {
  return { nic: 0, rdma: 0, hccn: 0 };
}

/** `10 min`, `45 s`. */
export function formatWindow(ms: number): string {
  const seconds = Math.round(ms / 1000);
  return seconds % 60 === 0 ? `${seconds / 60} min` : `${seconds} s`;
}

/** The link's name in a message: an NPU's RoCE port says what it is. */
function label(id: string, kind: LinkKind): string {
  return kind === 'hccn' ? `${nameOf(id)} RoCE port` : nameOf(id);
}

/** Flaps between the last reading and this one: the kernel's count, or at least what was seen. */
function flapsBetween(state: LinkState, reading: LinkReading): number {
  let counted = 0;
  if (reading.downs !== undefined && state.downs !== undefined)
    counted = Math.max(reading.downs - state.downs, 0);
  else if (reading.transitions !== undefined && state.transitions !== undefined) {
    const changes = Math.max(reading.transitions - state.transitions, 0);
    // From up, the first change is a loss; from down, the second is.
    counted = state.up === true ? Math.ceil(changes / 2) : Math.floor(changes / 2);
  }
  const seen = state.up === true && reading.up === false ? 1 : 0;
  return Math.max(counted, seen);
}

/** The links' states across rounds; see the file comment. */
export class LinkTracker {
  readonly #options: LinkTrackerOptions;
  /** By `kind:id` (an interface may be named like an NPU's port). */
  readonly #states = new Map<string, LinkState>();
  /** The kinds read at least once: their configured links are judged from then on. */
  readonly #read = new Set<LinkKind>();

  constructor(options: LinkTrackerOptions) {
    this.#options = options;
  }

  #configured(kind: LinkKind, id: string): boolean {
    const names = this.#options.configured[kind];
    return names.includes(id) || (kind === 'rdma' && names.includes(id.split('/')[0] as string));
  }

  /** Takes one round's readings (a kind left out was not read: its links keep their state). */
  update(now: number, sources: Partial<Record<LinkKind, LinkSource>>): LinkVerdict {
    const events: LinkEvent[] = [];
    const flaps = zeroes();
    for (const kind of Object.keys(sources) as LinkKind[]) {
      const source = sources[kind] as LinkSource;
      this.#apply(now, kind, source, { events, flaps });
      this.#read.add(kind);
    }
    const windowStart = now - this.#options.flapWindowMs;
    for (const state of this.#states.values()) {
      const { id } = state;
      state.flapTimes = state.flapTimes.filter((t) => t > windowStart);
      const flapping = state.watched && state.flapTimes.length >= this.#options.flapThreshold;
      if (flapping !== state.flapping) {
        const detail = `${plural(state.flapTimes.length, 'loss', 'losses')} in ${formatWindow(this.#options.flapWindowMs)}`;
        events.push({ id, kind: state.kind, what: flapping ? 'flapping' : 'steady', detail });
      }
      state.flapping = flapping;
    }
    return { ...this.#judge(), events, flaps };
  }

  #apply(
    now: number,
    kind: LinkKind,
    source: LinkSource,
    out: { events: LinkEvent[]; flaps: Record<LinkKind, number> },
  ): void {
    const listed = new Set<string>();
    for (const reading of source.readings) {
      if (reading.kind !== kind || listed.has(reading.id)) continue;
      listed.add(reading.id);
      this.#take(now, reading, out);
    }
    for (const [key, state] of this.#states) {
      const { id } = state;
      if (state.kind !== kind || listed.has(id) || !source.absentIsGone) continue;
      if (!state.watched) {
        this.#states.delete(key);
        continue;
      }
      if (state.present)
        out.events.push({
          id,
          kind,
          what: 'gone',
          detail: state.device ? `was ${state.device}` : 'no longer listed',
        });
      state.present = false;
    }
  }

  #take(
    now: number,
    reading: LinkReading,
    out: { events: LinkEvent[]; flaps: Record<LinkKind, number> },
  ): void {
    const { id, kind } = reading;
    let state = this.#states.get(`${kind}:${id}`);
    if (state === undefined) {
      state = {
        id,
        kind,
        watched: this.#configured(kind, id),
        present: false,
        up: undefined,
        seen: reading.seen,
        device: undefined,
        downs: undefined,
        transitions: undefined,
        flapTimes: [],
        flapping: false,
      };
      this.#states.set(`${kind}:${id}`, state);
    } else if (!state.present && state.watched) {
      out.events.push({ id, kind, what: 'back', detail: reading.seen });
    }
    const flaps = flapsBetween(state, reading);
    if (flaps > 0) {
      for (let i = 0; i < flaps && state.flapTimes.length < MAX_FLAP_TIMES; i++) state.flapTimes.push(now);
      if (state.watched) out.flaps[kind] += flaps;
    }
    if (!state.watched && reading.eligible && reading.up === true) {
      state.watched = true;
      const speed = reading.speedMbps === undefined ? '' : `, ${reading.speedMbps} Mb/s`;
      out.events.push({ id, kind, what: 'watched', detail: `auto-detected (${reading.seen}${speed})` });
    }
    if (state.watched && reading.up !== undefined && reading.up !== state.up && state.up !== undefined)
      out.events.push({ id, kind, what: reading.up ? 'up' : 'down', detail: reading.seen });
    else if (state.watched && reading.up === false && state.up === undefined)
      out.events.push({ id, kind, what: 'down', detail: reading.seen });
    state.present = true;
    state.downs = reading.downs;
    state.transitions = reading.transitions;
    state.device = reading.device ?? state.device;
    if (reading.up !== undefined) {
      state.up = reading.up;
      state.seen = reading.seen;
    }
  }

  #judge(): Pick<LinkVerdict, 'problems' | 'watched' | 'down'> {
    const watched = zeroes();
    const down = zeroes();
    const parts: Record<NodeProblem['reason'], { order: number; id: string; text: string }[]> = {} as never;
    const add = (kind: LinkKind, order: number, id: string, text: string): void => {
      (parts[REASON[kind]] ??= []).push({ order, id, text });
    };
    const window = formatWindow(this.#options.flapWindowMs);
    for (const state of this.#states.values()) {
      const { id } = state;
      if (!state.watched) continue;
      watched[state.kind]++;
      const losses = state.flapTimes.length;
      const name = label(id, state.kind);
      if (!state.present) {
        down[state.kind]++;
        add(state.kind, 0, id, `${name} gone${state.device ? ` (was ${nameOf(state.device)})` : ''}`);
      } else if (state.up === false) {
        down[state.kind]++;
        const flapped = losses > 1 ? `, ${plural(losses, 'loss', 'losses')} in ${window}` : '';
        add(state.kind, 1, id, `${name} down (${nameOf(state.seen, 96)}${flapped})`);
      } else if (state.flapping) {
        add(state.kind, 2, id, `${name} flapping: ${plural(losses, 'loss', 'losses')} in ${window}`);
      }
    }
    for (const kind of this.#read) {
      for (const name of this.#options.configured[kind]) {
        if (this.#matchesAny(kind, name)) continue;
        watched[kind]++;
        down[kind]++;
        add(kind, 0, name, `${label(name, kind)} not present`);
      }
    }
    const problems: NodeProblem[] = [];
    for (const reason of ['nic-link-down', 'rdma-port-down'] as const) {
      const list = parts[reason];
      if (!list?.length) continue;
      list.sort((a, b) => a.order - b.order || a.id.localeCompare(b.id, 'en', { numeric: true }));
      problems.push({ reason, message: joinProblemParts(list.map((p) => p.text)) });
    }
    return { problems, watched, down };
  }

  /** Whether a configured name has a state: the link itself, or a port of the RDMA device. */
  #matchesAny(kind: LinkKind, name: string): boolean {
    if (this.#states.has(`${kind}:${name}`)) return true;
    if (kind !== 'rdma' || name.includes('/')) return false;
    for (const state of this.#states.values())
      if (state.kind === 'rdma' && state.id.startsWith(`${name}/`)) return true;
    return false;
  }
}
