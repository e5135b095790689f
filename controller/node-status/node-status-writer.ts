/**
 * Keeps each accelerator Node's `NPUHealthy` condition and `npu-fault.io/latched`
 * annotation equal to the engine's view, and removes `npu-fault.io/clear` once applied.
 * Leader only: a Runnable started for one term (its signal aborts when leadership ends, and
 * every write first checks the fence).
 *
 * Level-triggered, as a controller-runtime reconciler: `markDirty(node)` queues a node
 * (transitions do, and the Node watch does when the Node's copy differs), a full resync
 * every `resyncMs` catches anything missed, and a node's reconcile compares desired with
 * what the Node says, writing only the difference. Writes happen one node at a time up to
 * `concurrency` at once; failures are logged, counted and retried on the next resync.
 */
import { Counter } from 'prom-client';
import { CLEAR_ANNOTATION, type PublishedNode } from '../../contracts/index.js';
import type { LatchedDevice } from '../../core/engine/index.js';
import {
  describeError,
  metricPrefix,
  type Clock,
  type Logger,
  type Registry,
  type Runnable,
} from '../../platform/index.js';
import type { Leadership } from '../leader-election/index.js';
import { LATCHED_ANNOTATION, encodeLatched } from './annotations.js';
import type { NodeClient } from './clients.js';
import { NPU_HEALTHY, desiredCondition, sameCondition } from './condition.js';

/** What the writer needs to know of a Node (from the Node watch's cache). */
export interface NodeFacts {
  /** The NPUHealthy condition on the Node now, if any. */
  condition?: { status?: string; reason?: string; message?: string };
  /** The npu-fault.io/latched annotation's value, if any. */
  latched?: string;
  /** The npu-fault.io/clear annotation's value, if any. */
  clear?: string;
}

/** The engine's view of a node. */
export interface NodeView {
  /** False until the node's agent has reported (no condition is written before). */
  observed: boolean;
  entry: PublishedNode | null;
  latched: LatchedDevice[];
}

/** The writer's dependencies. */
export interface NodeStatusWriterDeps {
  client: NodeClient;
  clock: Clock;
  log: Logger;
  registry: Registry;
  leadership(): Leadership;
  /** The Node's cached facts; undefined when the Node is gone or not an accelerator node. */
  facts(node: string): NodeFacts | undefined;
  view(node: string): NodeView;
  /** The clear annotation values this replica has applied to its engine, by node. */
  appliedClear(node: string): string | undefined;
  /**
   * True once a status document rendered after the node's clear was applied has been
   * acknowledged: only then is the annotation removed, so a restart in between cannot
   * latch the failure again from the previous document.
   */
  clearPublished(node: string): boolean;
  /** Every accelerator node (for the resync). */
  nodes(): Iterable<string>;
}

/** The writer, as a Runnable, with its queue. */
export interface NodeStatusWriter extends Runnable {
  markDirty(node: string): void;
  /** Resolves when the queue is empty and no write is in flight (tests). */
  idle(): Promise<void>;
}

/** Creates the writer; `resyncMs` (default 30 s), `concurrency` (default 4). */
export function createNodeStatusWriter(
  deps: NodeStatusWriterDeps,
  options: { resyncMs?: number; concurrency?: number } = {},
): NodeStatusWriter {
  const resyncMs = options.resyncMs ?? 30_000;
  const concurrency = options.concurrency ?? 4;
  const writes = new Counter({
    name: `${metricPrefix('controller')}node_condition_writes_total`,
    help: 'Writes to Nodes (NPUHealthy condition, latched and clear annotations) by what and result',
    labelNames: ['what', 'result'],
    registers: [deps.registry],
  });
  const dirty = new Set<string>();
  /** Nodes being reconciled: a node is never reconciled twice at once (stale facts). */
  const busy = new Set<string>();
  let inFlight = 0;
  let wake: (() => void) | undefined;
  let idleWaiters: (() => void)[] = [];

  const settleIdle = (): void => {
    if (dirty.size > 0 || inFlight > 0) return;
    for (const resolve of idleWaiters) resolve();
    idleWaiters = [];
  };

  const reconcile = async (node: string, signal: AbortSignal): Promise<void> => {
    const facts = deps.facts(node);
    if (facts === undefined) return;
    const view = deps.view(node);
    const lead = deps.leadership();
    if (!lead.leading || signal.aborted) return;
    const annotations: Record<string, string | null> = {};
    const latched = encodeLatched(view.latched);
    const applied = facts.clear !== undefined && deps.appliedClear(node) === facts.clear;
    // The latched record follows the engine, except that a node the engine has not seen
    // yet keeps its record (this replica seeded from it; nothing newer is known) unless a
    // clear was applied to it.
    if ((view.observed || applied) && (facts.latched ?? null) !== latched)
      annotations[LATCHED_ANNOTATION] = latched;
    if (Object.keys(annotations).length > 0) {
      await write('annotations', () => deps.client.patchAnnotations(node, annotations, signal), node);
    }
    // Only the value applied is removed: an operator's clear written since stays for the next pass.
    if (applied && facts.clear !== undefined && deps.clearPublished(node)) {
      const value = facts.clear;
      await write(
        'clear',
        async () => {
          if (!(await deps.client.removeAnnotationIf(node, CLEAR_ANNOTATION, value, signal)))
            deps.log.info({ node }, 'clear annotation changed since it was applied; kept for the next pass');
        },
        node,
      );
    }
    if (!view.observed) return;
    const desired = desiredCondition(view.entry);
    if (sameCondition(facts.condition, desired)) return;
    const now = new Date(deps.clock.now()).toISOString();
    await write(
      'condition',
      () =>
        deps.client.patchCondition(
          node,
          {
            type: NPU_HEALTHY,
            ...desired,
            lastHeartbeatTime: now,
            // The transition time moves only with the status (the API convention); left out,
            // the strategic merge keeps the one written before.
            ...(facts.condition?.status === desired.status ? {} : { lastTransitionTime: now }),
          },
          signal,
        ),
      node,
    );
  };

  const write = async (what: string, call: () => Promise<void>, node: string): Promise<void> => {
    try {
      await call();
      writes.inc({ what, result: 'ok' });
    } catch (error) {
      writes.inc({ what, result: 'error' });
      deps.log.warn({ err: describeError(error), node, what }, 'node status write failed');
    }
  };

  return {
    name: 'node-status',
    markDirty(node) {
      dirty.add(node);
      wake?.();
    },
    idle() {
      return new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        settleIdle();
      });
    },
    async start(signal) {
      for (const node of deps.nodes()) dirty.add(node);
      const cancelResync = repeat(deps.clock, resyncMs, signal, () => {
        for (const node of deps.nodes()) dirty.add(node);
        wake?.();
      });
      // One abort listener for the term (one per wait would pile up for hours): it wakes the loop.
      const onAbort = (): void => wake?.();
      signal.addEventListener('abort', onAbort, { once: true });
      const next = (): string | undefined => {
        if (inFlight >= concurrency) return undefined;
        for (const node of dirty) if (!busy.has(node)) return node;
        return undefined;
      };
      try {
        while (!signal.aborted) {
          const node = next();
          if (node === undefined) {
            settleIdle();
            await new Promise<void>((resolve) => (wake = resolve));
            wake = undefined;
            continue;
          }
          dirty.delete(node);
          busy.add(node);
          inFlight++;
          void reconcile(node, signal).finally(() => {
            busy.delete(node);
            inFlight--;
            wake?.();
            settleIdle();
          });
        }
      } finally {
        signal.removeEventListener('abort', onAbort);
        cancelResync();
        dirty.clear();
        settleIdle();
      }
    },
  };
}

/** Calls `fn` every `ms` until `signal` aborts; returns a cancel. */
function repeat(clock: Clock, ms: number, signal: AbortSignal, fn: () => void): () => void {
  let cancel = clock.schedule(ms, function again() {
    if (signal.aborted) return;
    fn();
    cancel = clock.schedule(ms, again);
  });
  return () => cancel();
}
