/**
 * Which watched file systems are read-only or full: pure, fed one round of path looks and the
 * mount table at a time.
 *
 * - Read-only (`filesystem-readonly`): the mount holding a path is read-only (mountinfo.ts)
 *   and the path was seen writable since the agent started (a file system remounted
 *   read-only after errors, the classic) or is configured as must-be-writable. A path
 *   read-only from the first read and not required writable (an immutable OS's root, a
 *   read-only model cache) is how the node is built, not a fault.
 * - Full (`filesystem-full`): a writable file system with fullPercent of its space for
 *   users in use (df's Use%: used / (used + available), so root's reserve does not count as
 *   free), or of its inodes, or less than minFreeBytes available. A read-only one is never
 *   full: nothing can be written there anyway (squashfs reads 100% used).
 * - Paths on one file system make one entry; each problem lists its file systems.
 * - A path that cannot be looked at this round (an error, a hung look) keeps its last known
 *   state; a missing path has none (configured but absent paths are common: a node without
 *   containerd, a cache not mounted yet) and says so as an event, not a problem. A mount table
 *   that cannot be read leaves read-only as last known.
 */
import type { NodeProblem } from '../check.js';
import { formatBytes, joinProblemParts, nameOf } from '../problem-message.js';
import type { FsUsage, PathLook } from './inspect.js';
import { findMount, isReadOnly, type MountEntry } from './mountinfo.js';

/** What the tracker is told once. */
export interface FilesystemTrackerOptions {
  readonly fullPercent: number;
  readonly minFreeBytes: number;
}

/** One path looked at this round. */
export interface PathObservation {
  /** As the host names it (`/var/lib/kubelet`). */
  readonly path: string;
  /** As the agent reached it (`/proc/1/root/var/lib/kubelet`). */
  readonly agentPath: string;
  readonly mustBeWritable: boolean;
  readonly look: PathLook;
}

/** What happened, for the logs. */
export interface FilesystemEvent {
  readonly what: 'missing' | 'found' | 'readonly' | 'writable' | 'full' | 'not-full';
  /** The path, or the file system's label. */
  readonly subject: string;
  readonly detail?: string;
}

/** A round's outcome. */
export interface FilesystemVerdict {
  readonly problems: readonly NodeProblem[];
  readonly events: readonly FilesystemEvent[];
  /** File systems read-only (a problem) and full now. */
  readonly readOnly: number;
  readonly full: number;
}

/** What was last known of a path's file system. */
interface PathFacts {
  readonly device: string;
  readonly mount: MountEntry | undefined;
  /** undefined: not known (no mount table yet, or no entry for it). */
  readonly readOnly: boolean | undefined;
  readonly usage: FsUsage;
}

interface PathState {
  seenWritable: boolean;
  missing: boolean | undefined;
  facts: PathFacts | undefined;
}

interface FilesystemGroup {
  readonly paths: string[];
  readonly facts: PathFacts;
  mustBeWritable: boolean;
  seenWritable: boolean;
}

/** df's Use%: used over what users could have, rounded up; undefined for a file system of no size. */
export function usedPercent(used: number, available: number): number | undefined {
  const total = used + available;
  return total > 0 ? Math.ceil((used * 100) / total) : undefined;
}

/** See the file comment. */
export class FilesystemTracker {
  readonly #options: FilesystemTrackerOptions;
  readonly #paths = new Map<string, PathState>();
  #problemKeys = new Map<string, string>();

  constructor(options: FilesystemTrackerOptions) {
    this.#options = options;
  }

  /** Takes a round: the mount table (undefined: unreadable) and each path's look. */
  update(
    mounts: readonly MountEntry[] | undefined,
    observations: readonly PathObservation[],
  ): FilesystemVerdict {
    const events: FilesystemEvent[] = [];
    const groups = new Map<string, FilesystemGroup>();
    for (const observation of observations) {
      const state = this.#observe(mounts, observation, events);
      const facts = state.facts;
      if (facts === undefined) continue;
      // Paths on one device under one mount are one file system (a mount found by path alone may hold several).
      const key = `${facts.device} ${facts.mount?.id ?? ''}`;
      const group = groups.get(key) ?? { paths: [], facts, mustBeWritable: false, seenWritable: false };
      group.paths.push(observation.path);
      group.mustBeWritable ||= observation.mustBeWritable;
      group.seenWritable ||= state.seenWritable;
      groups.set(key, group);
    }
    return this.#judge(groups, events);
  }

  #observe(
    mounts: readonly MountEntry[] | undefined,
    observation: PathObservation,
    events: FilesystemEvent[],
  ): PathState {
    const { path, look } = observation;
    const state = this.#paths.get(path) ?? { seenWritable: false, missing: undefined, facts: undefined };
    this.#paths.set(path, state);
    if (look.status === 'missing') {
      if (state.missing !== true) events.push({ what: 'missing', subject: path });
      state.missing = true;
      state.facts = undefined;
      return state;
    }
    if (look.status !== 'ok') return state;
    if (state.missing === true) events.push({ what: 'found', subject: path });
    state.missing = false;
    const mount =
      mounts === undefined
        ? state.facts?.mount
        : findMount(mounts, { hostPath: path, agentPath: observation.agentPath, device: look.device });
    const readOnly =
      mounts === undefined ? state.facts?.readOnly : mount === undefined ? undefined : isReadOnly(mount);
    state.facts = { device: look.device, mount, readOnly, usage: look.usage };
    if (readOnly === false) state.seenWritable = true;
    return state;
  }

  #judge(groups: ReadonlyMap<string, FilesystemGroup>, events: FilesystemEvent[]): FilesystemVerdict {
    const readOnlyParts: string[] = [];
    const fullParts: string[] = [];
    const problemKeys = new Map<string, string>();
    for (const [key, group] of groups) {
      const { facts } = group;
      const label = labelOf(group);
      if (facts.readOnly === true && (group.mustBeWritable || group.seenWritable)) {
        const why = group.seenWritable ? 'remounted read-only' : 'read-only, must be writable';
        const which = facts.mount?.superOptions.includes('ro') ? '' : ' (this mount only)';
        readOnlyParts.push(`${label}: ${why}${which}`);
        problemKeys.set(`readonly ${key}`, label);
      }
      if (facts.readOnly === true) continue;
      const full = this.#fullness(facts.usage);
      if (full === undefined) continue;
      fullParts.push(`${label}: ${full}`);
      problemKeys.set(`full ${key}`, label);
    }
    for (const [key, label] of problemKeys)
      if (!this.#problemKeys.has(key))
        events.push({ what: key.startsWith('full') ? 'full' : 'readonly', subject: label });
    for (const [key, label] of this.#problemKeys)
      if (!problemKeys.has(key))
        events.push({ what: key.startsWith('full') ? 'not-full' : 'writable', subject: label });
    this.#problemKeys = problemKeys;
    const problems: NodeProblem[] = [];
    if (readOnlyParts.length)
      problems.push({ reason: 'filesystem-readonly', message: joinProblemParts(readOnlyParts) });
    if (fullParts.length) problems.push({ reason: 'filesystem-full', message: joinProblemParts(fullParts) });
    return { problems, events, readOnly: readOnlyParts.length, full: fullParts.length };
  }

  /** What makes a file system full (`97% used, 3.1 GiB free`), or undefined when it is not. */
  #fullness(usage: FsUsage): string | undefined {
    const { fullPercent, minFreeBytes } = this.#options;
    const free = usage.bavail * usage.bsize;
    const space = usedPercent(usage.blocks - usage.bfree, usage.bavail);
    const inodes = usage.files > 0 ? usedPercent(usage.files - usage.ffree, usage.ffree) : undefined;
    const reasons: string[] = [];
    if (space !== undefined && space >= fullPercent) reasons.push(`${space}% used`);
    if (minFreeBytes > 0 && space !== undefined && free < minFreeBytes && reasons.length === 0)
      reasons.push(`${space}% used`);
    if (inodes !== undefined && inodes >= fullPercent) reasons.push(`inodes ${inodes}% used`);
    if (reasons.length === 0) return undefined;
    return `${reasons.join(', ')}, ${formatBytes(free)} free`;
  }
}

/** `/, /var/lib/kubelet (/dev/sda2 on /)` */
function labelOf(group: FilesystemGroup): string {
  const paths = group.paths.map((p) => nameOf(p, 64)).join(', ');
  const mount = group.facts.mount;
  return mount ? `${paths} (${nameOf(mount.source, 48)} on ${nameOf(mount.mountPoint, 64)})` : paths;
}
