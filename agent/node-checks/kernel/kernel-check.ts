/**
 * The kernel check: node problems from the kernel's own messages, which the kernel-log
 * follower (agent/events) hands to `record` as they are read. Nothing is read when it runs:
 * `run(now)` says which problems hold at `now` by what was recorded.
 *
 * - kernel-hung-task, kernel-soft-lockup, kernel-machine-check, filesystem-error: hold for
 *   their `holdSeconds` after the last such message (the kernel prints a hung task at most
 *   `kernel.hung_task_warnings` times, 10 by default, so silence does not mean recovery;
 *   the hold ends the problem instead).
 * - a remount read-only after errors is a `filesystem-error` too (a warning, held
 *   `holdSeconds.filesystemReadOnly`), naming the devices: the device may be any, a tenant's
 *   volume included, so only the filesystems check, which reads the mount table for the
 *   filesystems that matter, raises the critical `filesystem-readonly`, and lifts it when the
 *   filesystem is writable again.
 * - oom-kill-storm: at least `oomKills` kills by the node's OOM killer within
 *   `oomWindowSeconds`. A cgroup's OOM kill (`Memory cgroup out of memory`: a pod or container
 *   at its own memory limit) is that pod's problem, which Kubernetes already reports as
 *   OOMKilled; it does not count.
 *
 * Memory is bounded whatever the rate of messages: per kind, a ring of the last few dozen
 * times (the OOM ring holds `oomKills`, at most 1000), the last message and eight subjects.
 * Each message gives its problem one line: what was seen and how many (`3 hung tasks in 10
 * min, last: task python3:1234 blocked for more than 122 s`), with the tenant-chosen text
 * (a comm) already made printable and bounded by the parser. One info line when a problem
 * starts to hold and one when it stops.
 */
import type { Logger } from '../../../platform/index.js';
import type { NodeKernelEvent } from '../../events/index.js';
import type { NodeCheck, NodeProblem } from '../check.js';
import type { KernelCheckConfig } from './config.js';
import { RecentEvents, type RecentCount } from './recent.js';

type NodeProblemReason = NodeProblem['reason'];

/** What the kernel check is built with. */
export interface KernelCheckDeps {
  /** Where a problem starting or stopping to hold is said (one info line each). */
  log: Logger;
}

/** A NodeCheck fed by the follower: `record` each node event as it is read. */
export interface KernelCheck extends NodeCheck {
  /** One node-problem message of the kernel, read at `now` (epoch ms). */
  record(event: NodeKernelEvent, now: number): void;
}

/** The times kept per kind (besides the OOM ring): enough to say "12 hung tasks in 10 min". */
const KEPT = 64;

/** Longest message of a node problem (contracts SNAPSHOT_LIMITS.problemMessage). */
const MAX_MESSAGE = 256;

/** Subjects named in one message; more are counted. */
const SHOWN_SUBJECTS = 4;

/** The kinds that hold for a while after their last message, with their problem and words. */
const HELD = [
  { kind: 'hung-task', reason: 'kernel-hung-task', one: 'hung task', many: 'hung tasks', hold: 'hungTask' },
  {
    kind: 'soft-lockup',
    reason: 'kernel-soft-lockup',
    one: 'CPU lockup',
    many: 'CPU lockups',
    hold: 'softLockup',
  },
  {
    kind: 'machine-check',
    reason: 'kernel-machine-check',
    one: 'uncorrected hardware error',
    many: 'uncorrected hardware errors',
    hold: 'machineCheck',
  },
  {
    kind: 'fs-error',
    reason: 'filesystem-error',
    one: 'filesystem error',
    many: 'filesystem errors',
    hold: 'filesystemError',
  },
] as const satisfies ReadonlyArray<{
  kind: NodeKernelEvent['kind'];
  reason: NodeProblemReason;
  one: string;
  many: string;
  hold: keyof KernelCheckConfig['holdSeconds'];
}>;

type HeldKind = (typeof HELD)[number]['kind'];

/** `600` → `10 min`, `3600` → `1 h`, `90` → `90 s`. */
export function spanWords(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** `text` cut to the longest message a node problem carries. */
function bounded(text: string): string {
  return text.length <= MAX_MESSAGE ? text : `${text.slice(0, MAX_MESSAGE - 1)}…`;
}

/** `3`, or `64+` when older ones were dropped. */
function counted(recent: RecentCount): string {
  return `${recent.count}${recent.atLeast ? '+' : ''}`;
}

/** `sda1, dm-0` and `+2 more`. */
function listed(subjects: readonly string[]): string {
  const shown = subjects.slice(-SHOWN_SUBJECTS).reverse();
  const more = subjects.length - shown.length;
  return `${shown.join(', ')}${more > 0 ? ` +${more} more` : ''}`;
}

/**
 * When a message happened: the time its line carries when it is a valid one no later than
 * `now` (a log replayed from its start keeps its past), else `now`.
 */
function eventTime(event: NodeKernelEvent, now: number): number {
  const at = Date.parse(event.at);
  return Number.isFinite(at) ? Math.min(at, now) : now;
}

/** Builds the kernel check; see the file comment. */
export function createKernelCheck(config: KernelCheckConfig, deps: KernelCheckDeps): KernelCheck {
  const recent = new Map<HeldKind, RecentEvents>(HELD.map((held) => [held.kind, new RecentEvents(KEPT)]));
  const readOnly = new RecentEvents(KEPT);
  const oom = new RecentEvents(Math.max(config.oomKills, KEPT));
  let holding = new Set<NodeProblemReason>();

  const heldProblem = (held: (typeof HELD)[number], now: number): NodeProblem | null => {
    const events = recent.get(held.kind);
    const last = events?.last();
    const holdSeconds = config.holdSeconds[held.hold];
    const since = now - holdSeconds * 1000;
    if (!events || !last || last.at <= since) return null;
    const count = events.countSince(since);
    const where = held.kind === 'fs-error' ? ` on ${listed(events.subjectsSince(since))}` : '';
    const noun = count.count === 1 && !count.atLeast ? held.one : held.many;
    return {
      reason: held.reason,
      message: bounded(
        `${counted(count)} ${noun} in ${spanWords(holdSeconds)}${where}, last: ${last.detail}`,
      ),
    };
  };

  const readOnlyProblem = (now: number): NodeProblem | null => {
    const last = readOnly.last();
    const since = now - config.holdSeconds.filesystemReadOnly * 1000;
    if (!last || last.at <= since) return null;
    const when = new Date(last.at).toISOString();
    return {
      reason: 'filesystem-error',
      message: bounded(
        `remounted read-only after errors: ${listed(readOnly.subjectsSince(since))} (last at ${when})`,
      ),
    };
  };

  const oomProblem = (now: number): NodeProblem | null => {
    const count = oom.countSince(now - config.oomWindowSeconds * 1000);
    const last = oom.last();
    if (!last || count.count < config.oomKills) return null;
    return {
      reason: 'oom-kill-storm',
      message: bounded(
        `${counted(count)} node OOM kills in ${spanWords(config.oomWindowSeconds)} (a storm from ${config.oomKills}), last: ${last.detail}`,
      ),
    };
  };

  /** One info line per problem that starts or stops holding. */
  const report = (problems: readonly NodeProblem[]): void => {
    const now = new Set(problems.map((problem) => problem.reason));
    for (const problem of problems)
      if (!holding.has(problem.reason))
        deps.log.info({ reason: problem.reason, message: problem.message }, 'kernel node problem holds');
    for (const reason of holding)
      if (!now.has(reason)) deps.log.info({ reason }, 'kernel node problem no longer holds');
    holding = now;
  };

  return {
    name: 'kernel',
    intervalMs: config.intervalMs,
    record(event, now) {
      if (!config.enabled) return;
      const at = eventTime(event, now);
      if (event.kind === 'fs-readonly') readOnly.add(at, event.subject, event.detail);
      else if (event.kind === 'oom-kill') oom.add(at, event.subject, event.detail);
      else if (event.kind !== 'cgroup-oom-kill') recent.get(event.kind)?.add(at, event.subject, event.detail);
    },
    run(now) {
      if (!config.enabled) return Promise.resolve([]);
      const problems = [
        ...HELD.map((held) => heldProblem(held, now)),
        readOnlyProblem(now),
        oomProblem(now),
      ].filter((problem): problem is NodeProblem => problem !== null);
      report(problems);
      return Promise.resolve(problems);
    },
  };
}
