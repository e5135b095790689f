/**
 * Self-healing's dry run: the same decisions, logged, as Events (`would cordon …`) and in
 * metrics, once per change of what would be done on a node (or to the breaker); nothing is
 * written.
 */
import type { BreakerState } from '../../contracts/index.js';
import type { Logger } from '../../platform/index.js';
import type { EventRecorder } from '../node-status/index.js';
import type { Action } from './decide.js';
import type { RemediationMetrics } from './metrics.js';

/** What the reporter is built from. */
export interface DryRunDeps {
  events: EventRecorder;
  log: Logger;
  metrics: RemediationMetrics;
}

/** Reports what a dry run would do. */
export interface DryRunReporter {
  /** Reports `action`, unless it is what was last reported for its node. */
  action(action: Action): void;
  /** Whether the breaker's would-be state is news (and remembers it). */
  breakerNews(state: BreakerState['state']): boolean;
}

/** The breaker's entry in the memory of reports (a Node is never named ''). */
const BREAKER = '';

/** Creates the reporter of one term. */
export function createDryRunReporter(deps: DryRunDeps): DryRunReporter {
  const reported = new Map<string, string>();
  return {
    action(action) {
      if (action.kind === 'skip') return;
      const what = action.kind === 'record' ? `record ${action.record.phase}` : action.kind;
      if (reported.get(action.node) === what) return;
      reported.set(action.node, what);
      deps.metrics.actions.inc({ action: action.kind, result: 'dry-run' });
      deps.log.info({ node: action.node, action: what }, 'dry run: would act');
      deps.events.record(
        { apiVersion: 'v1', kind: 'Node', name: action.node, uid: action.node },
        'Normal',
        'RemediationDryRun',
        `would ${what}${action.kind === 'cordon' ? `: ${action.record.reason}` : ''}`,
      );
    },
    breakerNews(state) {
      const what = `breaker ${state}`;
      const news = reported.get(BREAKER) !== what;
      reported.set(BREAKER, what);
      return news;
    },
  };
}
