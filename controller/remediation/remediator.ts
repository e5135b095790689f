/**
 * Self-healing, run by the leader for one term: every pass decides the whole cluster
 * (decide.ts) from the Node cache, the published entries and the breaker ConfigMap, then acts.
 * This file (with the node and pod clients it is given) is the only code that changes the
 * cluster for remediation.
 *
 * - A pass runs every `intervalMs`, and at once when woken (a device failed or recovered, a
 *   Node changed).
 * - Every write first checks the fence (the term's leadership), re-reads the Node and acts
 *   only if its record is still the one the decision saw, and carries the Node's
 *   resourceVersion: a person's uncordon, a concurrent edit, or a stale cache makes the write
 *   a no-op or a 409, and the next pass decides again.
 * - The breaker's new state is written before anything is done under it.
 * - Drains run in the background, at most `maxConcurrent`; they stop with the term (the record
 *   says `draining`, so the next leader resumes them), when a person uncordons the node, or
 *   when it enters maintenance.
 * - Dry run: the same decisions, logged, as Events (`would cordon …`) and metrics, once per
 *   change; nothing is written, the breaker included (it is kept in memory).
 */
import type { PublishedNode } from '../../contracts/index.js';
import { describeError, isConflict, type Clock, type Logger, type Runnable } from '../../platform/index.js';
import type { Leadership } from '../leader-election/index.js';
import type { EventRecorder, InvolvedObject } from '../node-status/index.js';
import type { ConfigMapClient, StoredConfigMap } from '../publisher/index.js';
import type { CachedNode } from '../watch/index.js';
import type { RemediationConfig } from './config.js';
import { decide, type Action, type NodeFacts } from './decide.js';
import type { RemediationMetrics } from './metrics.js';
import type { NodeState, RemediationNodeClient, Taint } from './node-client.js';
import {
  BREAKER_CONFIGMAP,
  BREAKER_KEY,
  REMEDIATION_ANNOTATION,
  REMEDIATION_PHASES,
  decodeBreaker,
  decodeNodeRecord,
  encodeBreaker,
  encodeNodeRecord,
  UNHEALTHY_TAINT_KEY,
  type BreakerState,
  type NodeRecord,
} from './state.js';

/** What a drain reports (drain.ts). */
export interface DrainResult {
  readonly outcome: 'drained' | 'timed-out' | 'aborted';
  readonly evicted: readonly string[];
  readonly forced: readonly string[];
  readonly blocking: readonly { readonly pod: string; readonly reason: string }[];
}

/** Drains `node` (only the pods holding `devices` when the config says per device). */
export type DrainFunction = (
  node: string,
  devices: readonly string[],
  config: RemediationConfig['drain'],
  signal: AbortSignal,
) => Promise<DrainResult>;

/** What the remediator is built from. */
export interface RemediatorDeps {
  /** The Node cache. */
  nodes(): Iterable<CachedNode>;
  /** A node's published entry as the engine has it now (null: healthy; undefined: unseen). */
  entry(node: string): PublishedNode | null | undefined;
  /** The settings in force (hot-reloaded). */
  config(): RemediationConfig;
  nodeClient: RemediationNodeClient;
  configMaps: ConfigMapClient;
  drain: DrainFunction;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
  metrics: RemediationMetrics;
  /** The term's fence. */
  leadership(): Leadership;
}

/** Which term, where. */
export interface RemediatorOptions {
  identity: string;
  term: number;
  /** The controller's namespace (the breaker ConfigMap's). */
  namespace: string;
}

/** The running remediator of one term. */
export interface Remediator extends Runnable {
  /** Run a pass soon (a device changed status, a Node changed). */
  wake(): void;
  /** Resolves after the next complete pass (tests). */
  nextPass(): Promise<void>;
}

/** Creates the remediator of one term. */
export function createRemediator(deps: RemediatorDeps, options: RemediatorOptions): Remediator {
  const { clock, log, metrics } = deps;
  const running = new Map<string, AbortController>();
  /** Nodes whose last action failed: when they may be tried again, and the current delay. */
  const failures = new Map<string, { delay: number; until: number }>();
  const dryReported = new Map<string, string>();
  let wake: (() => void) | undefined;
  let woken = false;
  let passWaiters: (() => void)[] = [];
  const breakerKey = { namespace: options.namespace, name: BREAKER_CONFIGMAP };
  const breakerObject: InvolvedObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name: BREAKER_CONFIGMAP,
    namespace: options.namespace,
  };
  const nodeObject = (name: string): InvolvedObject => ({ apiVersion: 'v1', kind: 'Node', name, uid: name });
  const leading = (): boolean => deps.leadership().leading;

  const readBreaker = async (
    signal: AbortSignal,
  ): Promise<{ state: BreakerState; stored: StoredConfigMap | undefined; invalid?: string }> => {
    const stored = await deps.configMaps.get(breakerKey, signal);
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
  };

  const writeBreaker = async (
    next: BreakerState,
    stored: StoredConfigMap | undefined,
    signal: AbortSignal,
  ): Promise<void> => {
    const content = {
      labels: { 'app.kubernetes.io/name': 'npu-fault' },
      data: { [BREAKER_KEY]: encodeBreaker(next) },
    };
    if (stored) await deps.configMaps.replace(breakerKey, stored.resourceVersion, content, signal);
    else await deps.configMaps.create(breakerKey, content, signal);
  };

  const factsOf = (node: CachedNode, config: RemediationConfig): NodeFacts => {
    const [labelKey, labelValue] = splitLabel(config.optOutLabel);
    const optedOut = node.npuFaultLabels.some((label) => {
      const [key, value] = splitLabel(label);
      return key === labelKey && (labelValue === undefined || value === labelValue);
    });
    const decoded = node.remediation === undefined ? undefined : decodeNodeRecord(node.remediation);
    return {
      name: node.name,
      accelerator: node.accelerator,
      unschedulable: node.unschedulable,
      optedOut,
      maintenance: node.maintenance !== undefined,
      record: decoded?.value,
      ...(decoded?.error !== undefined ? { recordError: decoded.error } : {}),
    };
  };

  /** Re-reads the Node; the state if its record is still `expected` (the decision's), else undefined. */
  const current = async (
    node: string,
    expected: string | undefined,
    signal: AbortSignal,
  ): Promise<NodeState | undefined> => {
    const state = await deps.nodeClient.get(node, signal);
    if (!state || state.annotations[REMEDIATION_ANNOTATION] !== expected) return undefined;
    return state;
  };

  const count = (action: string, result: string): void => metrics.actions.inc({ action, result });

  const act = async (
    action: Action,
    expected: string | undefined,
    config: RemediationConfig,
    signal: AbortSignal,
  ): Promise<void> => {
    if (action.kind === 'skip') return;
    if (!leading()) return;
    if ((failures.get(action.node)?.until ?? 0) > clock.now()) return;
    try {
      switch (action.kind) {
        case 'cordon': {
          const state = await current(action.node, expected, signal);
          // Cordoned by someone else meanwhile: not ours to touch.
          if (!state || state.unschedulable) return count('cordon', 'stale');
          // `tainted` records whether we added the taint: one already there is not ours to remove.
          const adding = action.record.tainted && !hasTaint(state.taints);
          const taints = adding ? withTaint(state.taints, clock.now()) : state.taints;
          const record = { ...action.record, tainted: adding };
          if (!leading()) return;
          await deps.nodeClient.update(
            action.node,
            state.resourceVersion,
            {
              unschedulable: true,
              taints,
              annotations: { [REMEDIATION_ANNOTATION]: encodeNodeRecord(record) },
            },
            signal,
          );
          count('cordon', 'ok');
          failures.delete(action.node);
          log.warn({ node: action.node, reason: action.record.reason }, 'cordoned');
          deps.events.record(
            nodeObject(action.node),
            'Warning',
            'NodeCordoned',
            `cordoned by npu-fault: ${action.record.reason}`,
          );
          return;
        }
        case 'record': {
          const state = await current(action.node, expected, signal);
          if (!state || !leading()) return count('record', 'stale');
          await deps.nodeClient.update(
            action.node,
            state.resourceVersion,
            {
              ...(action.untaint ? { taints: withoutTaint(state.taints) } : {}),
              annotations: { [REMEDIATION_ANNOTATION]: encodeNodeRecord(action.record) },
            },
            signal,
          );
          count('record', 'ok');
          log.info(
            { node: action.node, phase: action.record.phase, why: action.why },
            'remediation record updated',
          );
          if (action.record.phase === 'overridden')
            deps.events.record(
              nodeObject(action.node),
              'Normal',
              'ManualUncordonRespected',
              'uncordoned by a person: npu-fault leaves it alone until it recovers',
            );
          return;
        }
        case 'uncordon': {
          const state = await current(action.node, expected, signal);
          if (!state || !leading()) return count('uncordon', 'stale');
          const taints = action.record.tainted ? withoutTaint(state.taints) : state.taints;
          await deps.nodeClient.update(
            action.node,
            state.resourceVersion,
            {
              unschedulable: false,
              taints,
              annotations: { [REMEDIATION_ANNOTATION]: encodeNodeRecord(action.record) },
            },
            signal,
          );
          count('uncordon', 'ok');
          log.info({ node: action.node }, 'uncordoned after recovery');
          deps.events.record(
            nodeObject(action.node),
            'Normal',
            'NodeUncordoned',
            `devices healthy for ${config.uncordon.holdSeconds}s: uncordoned by npu-fault`,
          );
          return;
        }
        case 'forget': {
          const state = await current(action.node, expected, signal);
          if (!state || !leading()) return count('forget', 'stale');
          await deps.nodeClient.update(
            action.node,
            state.resourceVersion,
            { annotations: { [REMEDIATION_ANNOTATION]: null } },
            signal,
          );
          count('forget', 'ok');
          return;
        }
        case 'drain': {
          if (running.has(action.node)) return;
          // Re-read even to resume: the cache may still say `draining` for a drain that just ended.
          const state = await current(action.node, expected, signal);
          if (!state || !leading()) return count('drain', 'stale');
          if (!action.resume) {
            await deps.nodeClient.update(
              action.node,
              state.resourceVersion,
              { annotations: { [REMEDIATION_ANNOTATION]: encodeNodeRecord(action.record) } },
              signal,
            );
          }
          count('drain', 'ok');
          startDrain(action.node, action.record, config, signal);
          return;
        }
      }
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
  };

  const startDrain = (
    node: string,
    record: NodeRecord,
    config: RemediationConfig,
    termSignal: AbortSignal,
  ): void => {
    const controller = new AbortController();
    const stop = (): void => controller.abort(termSignal.reason);
    termSignal.addEventListener('abort', stop, { once: true });
    running.set(node, controller);
    const started = clock.now();
    log.warn({ node, devices: record.devices, perDevice: config.drain.perDevice }, 'draining');
    deps.events.record(nodeObject(node), 'Normal', 'DrainStarted', `evicting pods: ${record.reason}`);
    void deps
      .drain(node, record.devices, config.drain, controller.signal)
      .then(async (report) => {
        metrics.drainSeconds.observe({ outcome: report.outcome }, (clock.now() - started) / 1000);
        metrics.evictions.inc({ result: 'evicted' }, report.evicted.length);
        metrics.evictions.inc({ result: 'forced' }, report.forced.length);
        if (report.outcome === 'aborted' || termSignal.aborted) return;
        const finished = new Date(clock.now()).toISOString();
        const blocking = report.blocking.slice(0, 20).map((b) => `${b.pod}: ${b.reason}`.slice(0, 512));
        const next: NodeRecord =
          report.outcome === 'drained'
            ? { ...record, phase: 'drained', drainFinishedAt: finished, blocking: [] }
            : { ...record, phase: 'blocked', drainFinishedAt: finished, blocking };
        metrics.evictions.inc({ result: 'blocked' }, report.blocking.length);
        metrics.blockingPods.set(report.blocking.length);
        const state = await deps.nodeClient.get(node, termSignal);
        const stored = state?.annotations[REMEDIATION_ANNOTATION];
        const decoded = stored === undefined ? undefined : decodeNodeRecord(stored);
        if (!state || decoded?.value?.phase !== 'draining' || !leading()) return;
        await deps.nodeClient.update(
          node,
          state.resourceVersion,
          { annotations: { [REMEDIATION_ANNOTATION]: encodeNodeRecord(next) } },
          termSignal,
        );
        if (report.outcome === 'drained') {
          log.warn({ node, evicted: report.evicted.length, forced: report.forced.length }, 'drained');
          deps.events.record(
            nodeObject(node),
            'Normal',
            'NodeDrained',
            `evicted ${report.evicted.length} pods${report.forced.length ? `, deleted ${report.forced.length}` : ''}`,
          );
        } else {
          log.warn({ node, blocking }, 'drain timed out; blocking pods reported, retried later');
          deps.events.record(
            nodeObject(node),
            'Warning',
            'DrainBlocked',
            `drain timed out after ${config.drain.timeoutSeconds}s; blocked by ${preview(blocking)}`,
          );
        }
      })
      .catch((error: unknown) => {
        if (!termSignal.aborted)
          log.warn({ err: describeError(error), node }, 'drain failed; the next pass resumes it');
      })
      .finally(() => {
        termSignal.removeEventListener('abort', stop);
        if (running.get(node) === controller) running.delete(node);
        wakeUp();
      });
  };

  const pass = async (config: RemediationConfig, signal: AbortSignal): Promise<void> => {
    const { state: storedBreaker, stored, invalid } = await readBreaker(signal);
    const breaker = storedBreaker;
    const facts: NodeFacts[] = [];
    const seen = new Map<string, string | undefined>();
    for (const node of deps.nodes()) {
      if (!node.accelerator && node.remediation === undefined) continue;
      facts.push(factsOf(node, config));
      seen.set(node.name, node.remediation);
    }
    // Drains that must stop: the node was uncordoned by a person, entered maintenance, was
    // opted out, or left. Only explicit signals count: the cache may lag behind our own write
    // (still `cordoned` for a drain just started).
    for (const [node, controller] of running) {
      const fact = facts.find((f) => f.name === node);
      if (
        !fact ||
        fact.maintenance ||
        fact.optedOut ||
        !fact.unschedulable ||
        fact.record?.phase === 'overridden'
      )
        controller.abort(new Error('drain no longer wanted'));
    }
    const decision = decide({
      now: clock.now(),
      config,
      identity: options.identity,
      term: options.term,
      nodes: facts,
      entry: deps.entry,
      breaker,
      draining: new Set(running.keys()),
    });
    metrics.skipped.reset();
    for (const action of decision.actions)
      if (action.kind === 'skip') metrics.skipped.inc({ why: action.why });
    for (const phase of REMEDIATION_PHASES)
      metrics.nodes.set({ phase }, facts.filter((f) => f.record?.phase === phase).length);
    const next = decision.breaker ?? breaker;
    metrics.breakerOpen.set(next.state === 'open' ? 1 : 0);

    // In a dry run nothing is written: the breaker it would open is reported once per change.
    let report = decision.breaker !== undefined;
    if (decision.breaker && config.dryRun) {
      const what = `breaker ${decision.breaker.state}`;
      report = dryReported.get('') !== what;
      dryReported.set('', what);
    } else if (decision.breaker && invalid === undefined) {
      if (!leading()) return;
      await writeBreaker(decision.breaker, stored, signal);
    }
    if (decision.breaker && report) {
      if (decision.breaker.state === 'open' && breaker.state === 'closed') {
        metrics.breakerTrips.inc();
        log.error(
          { reason: decision.breaker.reason, dryRun: config.dryRun },
          'remediation circuit breaker opened',
        );
        deps.events.record(
          breakerObject,
          'Warning',
          'RemediationBreakerOpen',
          `${config.dryRun ? '(dry run) ' : ''}no new cordons or drains: ${decision.breaker.reason ?? ''}; close with \`npu-fault remediation reset\``,
        );
      } else if (decision.breaker.state === 'closed' && breaker.state === 'open') {
        log.warn({ by: decision.breaker.closedBy }, 'remediation circuit breaker closed');
        deps.events.record(
          breakerObject,
          'Normal',
          'RemediationBreakerClosed',
          `closed by ${decision.breaker.closedBy ?? 'auto'}`,
        );
      }
    }
    if (invalid !== undefined)
      deps.events.record(
        breakerObject,
        'Warning',
        'RemediationBreakerInvalid',
        `${invalid}; treated as open (\`npu-fault remediation reset --force\` rewrites it)`,
      );

    for (const action of decision.actions) {
      if (signal.aborted) return;
      if (config.dryRun) {
        reportDry(action);
        continue;
      }
      await act(action, seen.get(action.node), config, signal);
    }
  };

  /** One pass when on and leading; a failure is logged and the next pass tries again. */
  const passSafely = async (config: RemediationConfig, signal: AbortSignal): Promise<void> => {
    if (config.mode === 'off' || !leading()) return;
    try {
      await pass(config, signal);
    } catch (error) {
      if (!signal.aborted) log.warn({ err: describeError(error) }, 'remediation pass failed; retrying');
    }
  };

  const reportDry = (action: Action): void => {
    if (action.kind === 'skip') return;
    const what = action.kind === 'record' ? `record ${action.record.phase}` : action.kind;
    if (dryReported.get(action.node) === what) return;
    dryReported.set(action.node, what);
    count(action.kind, 'dry-run');
    log.info({ node: action.node, action: what }, 'dry run: would act');
    deps.events.record(
      nodeObject(action.node),
      'Normal',
      'RemediationDryRun',
      `would ${what}${'record' in action && action.kind === 'cordon' ? `: ${action.record.reason}` : ''}`,
    );
  };

  const wakeUp = (): void => {
    woken = true;
    wake?.();
  };

  return {
    name: 'remediation',
    wake: wakeUp,
    nextPass: () => new Promise<void>((resolve) => passWaiters.push(resolve)),
    async start(signal) {
      const onAbort = (): void => wake?.();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        while (!signal.aborted) {
          const config = deps.config();
          woken = false;
          // Turned off, to cordon only, or to a dry run: drains in progress stop (records stay
          // `draining`, resumed if drain mode comes back).
          if (config.mode !== 'drain' || config.dryRun)
            for (const controller of running.values()) controller.abort(new Error('drain mode off'));
          const startedAt = clock.now();
          await passSafely(config, signal);
          const waiters = passWaiters;
          passWaiters = [];
          for (const resolve of waiters) resolve();
          if (signal.aborted) continue;
          // Woken passes come at most every MIN_GAP_MS: a storm of Node changes and transitions
          // must not become back-to-back passes (each reads the breaker and re-reads Nodes).
          const gap = Math.min(MIN_GAP_MS, config.intervalMs);
          const wait = woken ? Math.max(0, startedAt + gap - clock.now()) : config.intervalMs;
          if (wait === 0) continue;
          const inGap = woken;
          await new Promise<void>((resolve) => {
            const cancel = clock.schedule(wait, () => resolve());
            // A wake cuts the interval short, not the gap (the pass after it is due anyway).
            wake = () => {
              if (inGap && !signal.aborted) return;
              cancel();
              resolve();
            };
          });
          wake = undefined;
        }
      } finally {
        signal.removeEventListener('abort', onAbort);
        for (const controller of running.values()) controller.abort(new Error('term over'));
        for (const resolve of passWaiters) resolve();
        passWaiters = [];
      }
    },
  };
}

/** The shortest time between the starts of two passes when woken. */
const MIN_GAP_MS = 200;

/** `key=value` → [key, value]; `key` → [key, undefined]. */
function splitLabel(label: string): [string, string | undefined] {
  const at = label.indexOf('=');
  return at < 0 ? [label, undefined] : [label.slice(0, at), label.slice(at + 1)];
}

/** Whether the node carries our taint (key and effect). */
function hasTaint(taints: readonly Taint[]): boolean {
  return taints.some((t) => t.key === UNHEALTHY_TAINT_KEY && t.effect === 'NoSchedule');
}

/** The taints without ours (only our key with our effect). */
function withoutTaint(taints: readonly Taint[]): Taint[] {
  return taints.filter((t) => !(t.key === UNHEALTHY_TAINT_KEY && t.effect === 'NoSchedule'));
}

/** The taints with ours added (once). */
function withTaint(taints: readonly Taint[], now: number): Taint[] {
  if (hasTaint(taints)) return [...taints];
  return [
    ...taints,
    { key: UNHEALTHY_TAINT_KEY, value: 'true', effect: 'NoSchedule', timeAdded: new Date(now).toISOString() },
  ];
}

function preview(items: readonly string[], max = 5): string {
  if (items.length === 0) return 'no pod listed';
  return items.length <= max
    ? items.join('; ')
    : `${items.slice(0, max).join('; ')} and ${items.length - max} more`;
}
