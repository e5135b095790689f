/**
 * Runs the node checks, each on its own period, and keeps the problems that hold: the agent
 * adds them to every snapshot it sends (payload `node_problems`, CONTRACT §1.8) and, when the
 * set of reasons changes, sends one at once instead of at the next sample.
 *
 * A check that rejects anyway (a bug: checks report what they cannot read as their own
 * metric) keeps its last problems, is counted, and is logged once per failing spell; a check
 * never stops the others.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import { NODE_PROBLEM_REASONS, SNAPSHOT_LIMITS, type NodeProblemReading } from '../../contracts/index.js';
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

const ORDER = new Map<string, number>(NODE_PROBLEM_REASONS.map((reason, i) => [reason, i]));

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
  const holding = new Gauge({
    name: `${prefix}node_problem`,
    help: 'Whether a node problem holds now (1) or not (0), by reason (CONTRACT §1.8)',
    labelNames: ['reason'],
    registers,
  });
  for (const reason of NODE_PROBLEM_REASONS) holding.set({ reason }, 0);

  const latest = new Map<string, readonly NodeProblem[]>();
  let merged: NodeProblemReading[] = [];

  const update = (name: string, problems: readonly NodeProblem[]): void => {
    latest.set(name, problems);
    const next = mergeProblems(latest.values());
    const before = merged.map((p) => p.reason).join();
    merged = next;
    if (next.map((p) => p.reason).join() === before) return;
    const now = new Set(next.map((p) => p.reason));
    for (const reason of NODE_PROBLEM_REASONS) holding.set({ reason }, now.has(reason) ? 1 : 0);
    deps.log.info({ problems: next }, next.length === 0 ? 'no node problem holds' : 'node problems changed');
    deps.onChange?.();
  };

  const loop = async (check: NodeCheck, signal: AbortSignal): Promise<void> => {
    const log = deps.log.child({ check: check.name });
    let failing = false;
    while (!signal.aborted) {
      const started = deps.clock.monotonic();
      try {
        const problems = await check.run(deps.clock.now(), signal);
        if (signal.aborted) return;
        runs.inc({ check: check.name, result: 'ok' });
        if (failing) log.info('node check works again');
        failing = false;
        update(check.name, problems);
      } catch (error) {
        if (signal.aborted) return;
        runs.inc({ check: check.name, result: 'error' });
        if (!failing)
          log.warn(
            { err: errorCode(error) ?? String(error) },
            'node check failed; keeping its last problems',
          );
        failing = true;
      }
      duration.observe({ check: check.name }, (deps.clock.monotonic() - started) / 1000);
      await deps.clock.sleep(check.intervalMs, signal).catch(() => undefined);
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
