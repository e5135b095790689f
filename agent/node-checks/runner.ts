/**
 * Runs the node checks, each on its own period, and keeps the problems that hold: the agent
 * adds them to every snapshot it sends (payload `node_problems`, CONTRACT §1.8) and, when the
 * set of reasons changes, sends one at once instead of at the next sample.
 *
 * Rounds start every `intervalMs` (a round that takes longer is followed at once), never two
 * of one check at a time. A check that rejects anyway (a bug: checks report what they cannot
 * read as their own metric) or whose round outlasts its deadline (a read stuck in the kernel)
 * keeps its last problems, is counted, and is logged once per failing spell; a check never
 * stops the others, and `node_check_last_success_timestamp_seconds` says when each last
 * answered.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import {
  AGENT_NODE_PROBLEM_REASONS,
  SNAPSHOT_LIMITS,
  type NodeProblemReading,
} from '../../contracts/index.js';
import {
  errorCode,
  metricPrefix,
  type Clock,
  type Logger,
  type Registry,
  type Runnable,
} from '../../platform/index.js';
import type { NodeCheck, NodeProblem } from './check.js';

/** The node checks as one Runnable, and the problems that hold now. */
export interface NodeCheckRunner extends Runnable {
  /** The problems that hold, one per reason (messages of two checks joined), in contract order. */
  problems(): readonly NodeProblemReading[];
}

export interface NodeCheckRunnerDeps {
  clock: Clock;
  log: Logger;
  registry: Registry;
  /** Called when the set of reasons that hold changes (the agent sends a snapshot at once). */
  onChange?: () => void;
}

const ORDER = new Map<string, number>(AGENT_NODE_PROBLEM_REASONS.map((reason, i) => [reason, i]));

/** `text` as one printable line of at most `max` characters (a check's message may quote a tenant's text). */
export function oneLine(text: string, max: number = SNAPSHOT_LIMITS.problemMessage): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is replaced
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
  const chars = Array.from(
    flat.replace(/[\ud800-\udfff]/g, (c, i: number, s: string) => (isPaired(s, i) ? c : '\ufffd')),
  );
  return chars.length <= max ? chars.join('') : `${chars.slice(0, max - 1).join('')}…`;
}

function isPaired(s: string, i: number): boolean {
  const c = s.charCodeAt(i);
  return c <= 0xdbff
    ? (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00
    : i > 0 && (s.charCodeAt(i - 1) & 0xfc00) === 0xd800;
}

/** Merges the problems of every check: one entry per reason, in contract order, bounded. */
export function mergeProblems(lists: Iterable<readonly NodeProblem[]>): NodeProblemReading[] {
  const byReason = new Map<string, string[]>();
  for (const list of lists)
    for (const p of list) {
      if (!ORDER.has(p.reason)) continue;
      const messages = byReason.get(p.reason) ?? [];
      if (p.message !== '' && !messages.includes(p.message)) messages.push(p.message);
      byReason.set(p.reason, messages);
    }
  return [...byReason.entries()]
    .sort(([a], [b]) => (ORDER.get(a) ?? 0) - (ORDER.get(b) ?? 0))
    .slice(0, SNAPSHOT_LIMITS.nodeProblems)
    .map(([reason, messages]) => ({ reason, message: oneLine(messages.join('; ')) }));
}

/** How long one round may take before it is counted late: twice the period, at least 30 s. */
export function roundDeadlineMs(intervalMs: number): number {
  return Math.max(2 * intervalMs, 30_000);
}

/** Resolves 'stopped' when `signal` aborts before `settled` settles (its listener goes then). */
function stoppedBefore(signal: AbortSignal, settled: Promise<unknown>): Promise<'stopped'> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve('stopped');
    const onAbort = (): void => resolve('stopped');
    signal.addEventListener('abort', onAbort, { once: true });
    void settled.finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export function createNodeCheckRunner(
  checks: readonly NodeCheck[],
  deps: NodeCheckRunnerDeps,
): NodeCheckRunner {
  const prefix = metricPrefix('agent');
  const registers = [deps.registry];
  const runs = new Counter({
    name: `${prefix}node_check_runs_total`,
    help: 'Node check rounds, by check and result (error: the check itself failed, a bug)',
    labelNames: ['check', 'result'],
    registers,
  });
  const duration = new Histogram({
    name: `${prefix}node_check_duration_seconds`,
    help: 'How long one node check round took',
    labelNames: ['check'],
    buckets: [0.001, 0.01, 0.1, 0.5, 1, 2, 5, 10],
    registers,
  });
  const lastSuccess = new Gauge({
    name: `${prefix}node_check_last_success_timestamp_seconds`,
    help: 'When each node check last finished a round (a check stuck in the kernel stops moving it)',
    labelNames: ['check'],
    registers,
  });
  const holding = new Gauge({
    name: `${prefix}node_problem`,
    help: 'Whether a node problem holds now (1) or not (0), by reason (CONTRACT §1.8)',
    labelNames: ['reason'],
    registers,
  });
  for (const reason of AGENT_NODE_PROBLEM_REASONS) holding.set({ reason }, 0);

  const latest = new Map<string, readonly NodeProblem[]>();
  let merged: NodeProblemReading[] = [];

  const update = (name: string, problems: readonly NodeProblem[]): void => {
    latest.set(name, problems);
    const next = mergeProblems(latest.values());
    const changed = next.length !== merged.length || next.some((p, i) => p.reason !== merged[i]?.reason);
    merged = next;
    if (!changed) return;
    const now = new Set(next.map((p) => p.reason));
    for (const reason of AGENT_NODE_PROBLEM_REASONS) holding.set({ reason }, now.has(reason) ? 1 : 0);
    deps.log.info({ problems: next }, next.length === 0 ? 'no node problem holds' : 'node problems changed');
    deps.onChange?.();
  };

  const loop = async (check: NodeCheck, signal: AbortSignal): Promise<void> => {
    const log = deps.log.child({ check: check.name });
    const deadlineMs = roundDeadlineMs(check.intervalMs);
    let failing = false;
    const fail = (result: 'error' | 'timeout', error: unknown): void => {
      runs.inc({ check: check.name, result });
      if (!failing)
        log.warn(
          { result, err: error === undefined ? undefined : (errorCode(error) ?? String(error)) },
          result === 'timeout'
            ? `node check round past its ${deadlineMs / 1000} s deadline; keeping its last problems`
            : 'node check failed; keeping its last problems',
        );
      failing = true;
    };
    while (!signal.aborted) {
      const started = deps.clock.monotonic();
      const round = check.run(deps.clock.now(), signal).then(
        (problems) => ({ problems }),
        (error: unknown) => ({ error }),
      );
      const timer = new AbortController();
      const deadline = deps.clock.sleep(deadlineMs, AbortSignal.any([signal, timer.signal])).then(
        () => 'late' as const,
        () => 'stopped' as const,
      );
      let outcome = await Promise.race([round, deadline]);
      if (outcome === 'late') {
        fail('timeout', undefined);
        // Never two rounds of one check at once: the stuck one is waited for (or the stop).
        outcome = await Promise.race([round, stoppedBefore(signal, round)]);
      }
      timer.abort();
      if (signal.aborted || outcome === 'stopped') return;
      if ('error' in outcome) fail('error', outcome.error);
      else {
        runs.inc({ check: check.name, result: 'ok' });
        lastSuccess.set({ check: check.name }, deps.clock.now() / 1000);
        if (failing) log.info('node check works again');
        failing = false;
        update(check.name, outcome.problems);
      }
      const took = deps.clock.monotonic() - started;
      duration.observe({ check: check.name }, took / 1000);
      await deps.clock.sleep(Math.max(0, check.intervalMs - took), signal).catch(() => undefined);
    }
  };

  return {
    name: 'node-checks',
    problems: () => merged,
    async start(signal) {
      await Promise.all(checks.map((check) => loop(check, signal)));
    },
  };
}
