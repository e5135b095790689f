/** What every action handler works with (built by the executor, execute.ts, for each action). */
import type { Clock, Logger } from '../../../platform/index.js';
import type { EventRecorder, InvolvedObject } from '../../node-status/index.js';
import type { RemediationConfig } from '../config.js';
import type { Action } from '../decide.js';
import type { DrainRunner } from '../drain-runner.js';
import type { NodeRecords } from '../node-records.js';

/** The actions that change the cluster (a skip does nothing). */
export type ActingKind = Exclude<Action['kind'], 'skip'>;

/** One action of `kind`. */
export type ActionOf<K extends ActingKind> = Extract<Action, { kind: K }>;

/** The executor's context for one action. */
export interface ActionContext {
  readonly records: NodeRecords;
  readonly drains: DrainRunner;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly log: Logger;
  /** The settings the pass decided with. */
  readonly config: RemediationConfig;
  /** The record text the decision saw on the node (undefined: none). */
  readonly expected: string | undefined;
  /** The term's signal. */
  readonly signal: AbortSignal;
  /** The term's fence. */
  leading(): boolean;
  /** Counts an action's result (`ok`, `stale`) in remediation_actions_total. */
  count(action: ActingKind, result: string): void;
  /** The node's action went through: its failure backoff ends. */
  succeeded(node: string): void;
}

/** Carries out one kind of action; throws what the API threw (the executor counts and backs off). */
export type ActionHandler<K extends ActingKind> = (
  action: ActionOf<K>,
  context: ActionContext,
) => Promise<void>;

/** A Node as an Event's involved object. */
export function nodeObject(name: string): InvolvedObject {
  return { apiVersion: 'v1', kind: 'Node', name, uid: name };
}
