/**
 * Self-healing's executor: carries out one decided action through its handler (actions/),
 * only while the term leads, and not while the node's last failure is backing off. A failed
 * action is counted and logged; the next pass decides again.
 */
import { describeError, isConflict, type Clock, type Logger } from '../../platform/index.js';
import type { EventRecorder } from '../node-status/index.js';
import {
  ACTION_HANDLERS,
  type ActingKind,
  type ActionContext,
  type ActionHandler,
  type ActionOf,
} from './actions/index.js';
import type { RemediationConfig } from './config.js';
import type { Action } from './decide.js';
import type { DrainRunner } from './drain-runner.js';
import type { RemediationMetrics } from './metrics.js';
import type { NodeRecords } from './node-records.js';

/** What the executor is built from. */
export interface ExecutorDeps {
  records: NodeRecords;
  drains: DrainRunner;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
  metrics: RemediationMetrics;
  /** The term's fence. */
  leading(): boolean;
}

/** Carries out actions. */
export interface Executor {
  /** Acts on `action`; `expected` is the record text the decision saw on the node. */
  act(
    action: Action,
    expected: string | undefined,
    config: RemediationConfig,
    signal: AbortSignal,
  ): Promise<void>;
}

/** Creates the executor of one term (its backoff lasts the term). */
export function createExecutor(deps: ExecutorDeps): Executor {
  const { clock, log, metrics } = deps;
  /** Nodes whose last action failed: when they may be tried again, and the current delay. */
  const failures = new Map<string, { delay: number; until: number }>();
  const count = (action: ActingKind, result: string): void => metrics.actions.inc({ action, result });

  return {
    async act(action, expected, config, signal) {
      if (action.kind === 'skip') return;
      if (!deps.leading()) return;
      if ((failures.get(action.node)?.until ?? 0) > clock.now()) return;
      const context: ActionContext = {
        records: deps.records,
        drains: deps.drains,
        events: deps.events,
        clock,
        log,
        config,
        expected,
        signal,
        leading: deps.leading,
        count,
        succeeded: (node) => void failures.delete(node),
      };
      try {
        await handle(action.kind, action, context);
      } catch (error) {
        if (signal.aborted) return;
        // A conflict is retried on the next pass; anything else waits, doubling (1 s to 1 min),
        // so a persistent failure (a 403, an admission webhook) is not hammered every pass.
        if (!isConflict(error)) {
          const delay = Math.min(60_000, (failures.get(action.node)?.delay ?? 500) * 2);
          failures.set(action.node, { delay, until: clock.now() + delay });
        }
        count(action.kind, isConflict(error) ? 'conflict' : 'error');
        log.warn(
          { err: describeError(error), node: action.node, action: action.kind },
          'remediation action failed; the next pass decides again',
        );
      }
    },
  };
}

/** Dispatches `action` to the handler of its kind. */
function handle<K extends ActingKind>(kind: K, action: ActionOf<K>, context: ActionContext): Promise<void> {
  const handler: ActionHandler<K> = ACTION_HANDLERS[kind];
  return handler(action, context);
}
