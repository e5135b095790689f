/**
 * Self-healing's circuit breaker in the API (ConfigMap `<namespace>/npu-fault-remediation-state`,
 * format in contracts/): read at the start of every pass, its new state written before
 * anything is done under it, and every change said (log, metric, Event). An unreadable stored
 * breaker counts as open and is never overwritten (`npu-fault remediation reset --force` does).
 * In a dry run nothing is written: the state it would take is reported once per change.
 */
import {
  BREAKER_CONFIGMAP,
  BREAKER_KEY,
  decodeBreaker,
  encodeBreaker,
  type BreakerState,
} from '../../contracts/index.js';
import type { Logger } from '../../platform/index.js';
import type { EventRecorder, InvolvedObject } from '../node-status/index.js';
import type { ConfigMapClient, StoredConfigMap } from '../publisher/index.js';
import type { RemediationConfig } from './config.js';
import type { DryRunReporter } from './dry-run.js';
import type { RemediationMetrics } from './metrics.js';

/** The breaker as a pass read it. */
export interface ReadBreaker {
  state: BreakerState;
  /** The ConfigMap it came from (undefined: none yet). */
  stored: StoredConfigMap | undefined;
  /** Why the stored state is unreadable (then `state` is open). */
  invalid?: string;
}

/** What the breaker is built from. */
export interface BreakerDeps {
  configMaps: ConfigMapClient;
  events: EventRecorder;
  log: Logger;
  metrics: RemediationMetrics;
  dryRun: DryRunReporter;
  /** The term's fence. */
  leading(): boolean;
}

/** The breaker of one term. */
export interface Breaker {
  read(signal: AbortSignal): Promise<ReadBreaker>;
  /**
   * Persists `next` (the decision's new state, undefined: unchanged) and says what changed.
   * False when the term stopped leading before the write: the pass must not act.
   */
  settle(
    read: ReadBreaker,
    next: BreakerState | undefined,
    config: RemediationConfig,
    signal: AbortSignal,
  ): Promise<boolean>;
}

/** Creates the breaker kept in `namespace`. */
export function createBreaker(deps: BreakerDeps, namespace: string): Breaker {
  const { log, metrics, events } = deps;
  const key = { namespace, name: BREAKER_CONFIGMAP };
  const object: InvolvedObject = { apiVersion: 'v1', kind: 'ConfigMap', name: BREAKER_CONFIGMAP, namespace };

  const write = async (
    next: BreakerState,
    stored: StoredConfigMap | undefined,
    signal: AbortSignal,
  ): Promise<void> => {
    const content = {
      labels: { 'app.kubernetes.io/name': 'npu-fault' },
      data: { [BREAKER_KEY]: encodeBreaker(next) },
    };
    if (stored) await deps.configMaps.replace(key, stored.resourceVersion, content, signal);
    else await deps.configMaps.create(key, content, signal);
  };

  const sayChanged = (previous: BreakerState, next: BreakerState, config: RemediationConfig): void => {
    if (next.state === 'open' && previous.state === 'closed') {
      metrics.breakerTrips.inc();
      log.error({ reason: next.reason, dryRun: config.dryRun }, 'remediation circuit breaker opened');
      events.record(
        object,
        'Warning',
        'RemediationBreakerOpen',
        `${config.dryRun ? '(dry run) ' : ''}no new cordons or drains: ${next.reason ?? ''}; close with \`npu-fault remediation reset\``,
      );
    } else if (next.state === 'closed' && previous.state === 'open') {
      log.warn({ by: next.closedBy }, 'remediation circuit breaker closed');
      events.record(object, 'Normal', 'RemediationBreakerClosed', `closed by ${next.closedBy ?? 'auto'}`);
    }
  };

  return {
    async read(signal) {
      const stored = await deps.configMaps.get(key, signal);
      const decoded = decodeBreaker(stored?.data[BREAKER_KEY]);
      if (decoded.error === undefined) return { state: decoded.value, stored };
      // An unreadable breaker is treated as open: acting without it is what it guards against.
      return {
        state: {
          state: 'open',
          openedAt: null,
          reason: decoded.error,
          unhealthy: [],
          acknowledged: [],
          closedAt: null,
          closedBy: null,
        },
        stored,
        invalid: decoded.error,
      };
    },
    async settle(read, next, config, signal) {
      let report = next !== undefined;
      if (next && config.dryRun) report = deps.dryRun.breakerNews(next.state);
      else if (next && read.invalid === undefined) {
        if (!deps.leading()) return false;
        await write(next, read.stored, signal);
      }
      if (next && report) sayChanged(read.state, next, config);
      if (read.invalid !== undefined)
        events.record(
          object,
          'Warning',
          'RemediationBreakerInvalid',
          `${read.invalid}; treated as open (\`npu-fault remediation reset --force\` rewrites it)`,
        );
      return true;
    },
  };
}
