/**
 * The Node cache: every Node, reduced to what the controller reads of it.
 *
 * - **Accelerator node**: its capacity has a non-zero quantity of a configured extended
 *   resource (default the Ascend 910/310P/310 and NVIDIA GPU ones), or its labels match the
 *   optional selector.
 * - **Ready** drives `node-not-ready`: the Ready condition True → true, False or Unknown →
 *   false, no Ready condition (a node not yet reported by its kubelet) → undefined.
 * - **Conditions the rules name** (`node_conditions`: the kubelet's pressure conditions,
 *   node-problem-detector's) drive their node reasons: type → status, only for the types the
 *   rules in force name when the Node is cached (at most MAX_NODE_CONDITIONS), and only the
 *   statuses True, False and Unknown; any other type or status is not kept.
 * - The annotations `npu-fault.io/clear` and `npu-fault.io/latched`, and the current
 *   `NPUHealthy` condition (so the writer skips what is already there), as strings.
 *
 * Every Node is cached, accelerator or not (`accelerator: false`): a device plugin that dies
 * can take its resource out of capacity, and a node with failed devices must not drop out
 * of the document because of it. The controller decides what a node that stops being an
 * accelerator node means; it gets the change with both values. A Node costs ~200 bytes here.
 *
 * Changes are reported only when a cached field changes, not for every Node write (kubelets
 * rewrite heartbeat times): `onChange` sees the previous and current values.
 */
import { CLEAR_ANNOTATION, MAINTENANCE_ANNOTATION, REMEDIATION_ANNOTATION } from '../../contracts/index.js';
import {
  createWatchLoop,
  type WatchLoop,
  type WatchLoopDeps,
  type WatchLoopOptions,
} from '../../platform/k8s/index.js';
import { parseNodeWatchConfig, type NodeWatchConfig, type NodeWatchConfigInput } from './config.js';
import { matchesLabels, parseLabelSelector, type LabelSelector } from './label-selector.js';
import type { RawObject } from '../../platform/k8s/index.js';
import type { Runnable } from '../../platform/index.js';
import { LATCHED_ANNOTATION } from '../../contracts/index.js';

/** The annotation holding the node's latched failures (written by node-status). */
export { LATCHED_ANNOTATION };

/** Labels with this prefix are cached (the remediation opt-out label is one). */
export const CACHED_LABEL_PREFIX = 'npu-fault.io/';
/** The Node condition the controller writes. */
export const NPU_HEALTHY_CONDITION = 'NPUHealthy';

/** A Node condition as cached (strings as the API has them; missing ones empty). */
export interface CachedCondition {
  readonly status: string;
  readonly reason: string;
  readonly message: string;
}

/** What the controller knows of a Node. */
export interface CachedNode {
  readonly name: string;
  /** Has a configured accelerator resource in capacity (non-zero), or matches the label selector. */
  readonly accelerator: boolean;
  /** Ready condition: True → true; False, Unknown → false; absent → undefined. */
  readonly ready: boolean | undefined;
  /** The `npu-fault.io/clear` annotation, if present. */
  readonly clear: string | undefined;
  /** The `npu-fault.io/latched` annotation, if present. */
  readonly latched: string | undefined;
  /** The `NPUHealthy` condition, if present. */
  readonly npuHealthy: CachedCondition | undefined;
  /** The conditions of the types the rules name (type → True/False/Unknown; no prototype); absent: none. */
  readonly conditions?: Readonly<Record<string, string>>;
  /** `spec.unschedulable` (cordoned by anyone). */
  readonly unschedulable: boolean;
  /** The `npu-fault.io/remediation` annotation, if present. */
  readonly remediation: string | undefined;
  /** The `npu-fault.io/maintenance` annotation, if present. */
  readonly maintenance: string | undefined;
  /** The Node's labels under `npu-fault.io/` (the others are not cached), as `key=value`, sorted. */
  readonly npuFaultLabels: readonly string[];
  /** The Node's resourceVersion when this was cached (not compared: a new version alone is no change). */
  readonly resourceVersion: string;
}

/** A change of one Node: added (no previous), changed (both), deleted (no current). */
export interface NodeChange {
  readonly name: string;
  readonly previous: CachedNode | undefined;
  readonly current: CachedNode | undefined;
}

/** Called as Nodes change (synchronously, from the watch; a throw is logged, never fatal). */
export interface NodeWatchCallbacks {
  /** A Node was added, changed in a cached field, or deleted (also: missed and found by a re-list). */
  onChange?(change: NodeChange): void;
  /** The first complete list is cached (its onChange calls came first). Called once. */
  onSynced?(): void;
}

/** How the node watch runs. */
export interface NodeWatchOptions {
  /** Accelerator resources, label selector, watchdog; parsed and checked here. */
  config?: NodeWatchConfigInput;
  callbacks?: NodeWatchCallbacks;
  /**
   * The condition types to keep (the rules' `node_conditions`), asked at each Node event, so
   * a rules reload changes what is kept from each Node's next write. Default: none.
   */
  conditionTypes?: () => ReadonlySet<string>;
  /** Loop tuning beyond the config (server timeout, backoff, metrics component); mostly for tests. */
  loop?: Pick<
    WatchLoopOptions<CachedNode>,
    'minWatchTimeoutSeconds' | 'initialBackoffMs' | 'maxBackoffMs' | 'metricsComponent'
  >;
}

/** The running Node cache. */
export interface NodeWatch extends Runnable {
  synced(): boolean;
  whenSynced(): Promise<void>;
  /** The Node `name`, if it exists. */
  get(name: string): CachedNode | undefined;
  /** Every Node. */
  values(): IterableIterator<CachedNode>;
  /** The accelerator nodes, in no particular order. */
  acceleratorNodes(): CachedNode[];
  /** How many Nodes are cached. */
  readonly size: number;
}

/** Builds the Node cache on a client of the Node collection (all Nodes, no selector). */
export function createNodeWatch(deps: WatchLoopDeps, options: NodeWatchOptions = {}): NodeWatch {
  const config = parseNodeWatchConfig(options.config);
  const classify = acceleratorRule(config);
  const callbacks = options.callbacks ?? {};
  const conditionTypes = options.conditionTypes ?? ((): ReadonlySet<string> => NO_TYPES);
  const report = (name: string, previous: CachedNode | undefined, current: CachedNode | undefined): void =>
    callbacks.onChange?.({ name, previous, current });
  const loop: WatchLoop<CachedNode> = createWatchLoop(deps, {
    ...options.loop,
    resource: 'nodes',
    watchdogMs: config.watchdogSeconds * 1000,
    transform: (raw) => nodeFromObject(raw, classify, conditionTypes()),
    equals: sameNode,
    handlers: {
      onAdd: (name, node) => report(name, undefined, node),
      onUpdate: (name, node, previous) => report(name, previous, node),
      onDelete: (name, previous) => report(name, previous, undefined),
      onSynced: () => callbacks.onSynced?.(),
    },
  });
  return {
    name: loop.name,
    start: (signal) => loop.start(signal),
    synced: () => loop.synced(),
    whenSynced: () => loop.whenSynced(),
    get: (name) => loop.get(name),
    values: () => loop.values(),
    acceleratorNodes: () => [...loop.values()].filter((node) => node.accelerator),
    get size() {
      return loop.size;
    },
  };
}

/** Decides whether a Node is an accelerator node from its capacity and labels. */
export type AcceleratorRule = (
  capacity: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>>,
) => boolean;

/** The rule of `config`: a non-zero configured resource in capacity, or the label selector (when set). */
export function acceleratorRule(
  config: Pick<NodeWatchConfig, 'resourceNames' | 'labelSelector'>,
): AcceleratorRule {
  const selector: LabelSelector | undefined =
    config.labelSelector.trim() === '' ? undefined : parseLabelSelector(config.labelSelector);
  const resources = [...config.resourceNames];
  return (capacity, labels) =>
    resources.some((resource) => isNonZeroQuantity(capacity[resource])) ||
    (selector !== undefined && matchesLabels(selector, labels));
}

const NO_TYPES: ReadonlySet<string> = new Set();
const NO_CONDITIONS: Readonly<Record<string, string>> = Object.freeze(
  Object.create(null) as Record<string, string>,
);
/** The statuses a condition is kept with; a Node written by someone else may say anything. */
const CONDITION_STATUSES: ReadonlySet<string> = new Set(['True', 'False', 'Unknown']);

/** The cached value of a Node object, or undefined when it has no name. */
export function nodeFromObject(
  raw: RawObject,
  isAccelerator: AcceleratorRule,
  conditionTypes: ReadonlySet<string> = NO_TYPES,
): CachedNode | undefined {
  const name = raw.metadata?.name;
  if (typeof name !== 'string' || name === '') return undefined;
  const status = recordOf(raw.status);
  const spec = recordOf((raw as { spec?: unknown }).spec);
  const annotations = stringsOf(raw.metadata?.annotations);
  const labels = stringsOf(raw.metadata?.labels);
  const conditions = Array.isArray(status.conditions) ? status.conditions.map(recordOf) : [];
  const ready = conditionOf(conditions, 'Ready');
  const npuHealthy = conditionOf(conditions, NPU_HEALTHY_CONDITION);
  return {
    name,
    accelerator: isAccelerator(stringsOf(status.capacity), labels),
    ready: ready === undefined ? undefined : ready.status === 'True',
    clear: annotations[CLEAR_ANNOTATION],
    latched: annotations[LATCHED_ANNOTATION],
    npuHealthy,
    ...namedConditions(conditions, conditionTypes),
    unschedulable: spec.unschedulable === true,
    remediation: annotations[REMEDIATION_ANNOTATION],
    maintenance: annotations[MAINTENANCE_ANNOTATION],
    npuFaultLabels: Object.keys(labels)
      .filter((key) => key.startsWith(CACHED_LABEL_PREFIX))
      .sort()
      .map((key) => `${key}=${labels[key]}`),
    resourceVersion: typeof raw.metadata?.resourceVersion === 'string' ? raw.metadata.resourceVersion : '',
  };
}

/** Two cached Nodes are the same when every field but resourceVersion is. */
function sameNode(a: CachedNode, b: CachedNode): boolean {
  return (
    a.name === b.name &&
    a.accelerator === b.accelerator &&
    a.ready === b.ready &&
    a.clear === b.clear &&
    a.latched === b.latched &&
    a.npuHealthy?.status === b.npuHealthy?.status &&
    a.npuHealthy?.reason === b.npuHealthy?.reason &&
    a.npuHealthy?.message === b.npuHealthy?.message &&
    sameConditions(a.conditions, b.conditions) &&
    a.unschedulable === b.unschedulable &&
    a.remediation === b.remediation &&
    a.maintenance === b.maintenance &&
    a.npuFaultLabels.join('\n') === b.npuFaultLabels.join('\n')
  );
}

/**
 * Whether a resource quantity (`8`, `0`, `1k`, `500m`) is above zero: its number part has a
 * non-zero digit. A missing or unreadable quantity is zero.
 */
export function isNonZeroQuantity(quantity: string | undefined): boolean {
  const number = /^\+?(\d*\.?\d*)/.exec(quantity ?? '')?.[1] ?? '';
  return /[1-9]/.test(number);
}

function conditionOf(
  conditions: readonly Record<string, unknown>[],
  type: string,
): CachedCondition | undefined {
  const found = conditions.find((condition) => condition.type === type);
  if (!found) return undefined;
  const text = (value: unknown): string => (typeof value === 'string' ? value : '');
  return { status: text(found.status), reason: text(found.reason), message: text(found.message) };
}

/** The first condition of each named type with a known status, as type → status (no prototype); none: {}. */
function namedConditions(
  conditions: readonly Record<string, unknown>[],
  types: ReadonlySet<string>,
): { conditions?: Record<string, string> } {
  if (types.size === 0) return {};
  const out = Object.create(null) as Record<string, string>;
  const seen = new Set<string>();
  let kept = 0;
  for (const condition of conditions) {
    const { type, status } = condition;
    if (typeof type !== 'string' || !types.has(type) || seen.has(type)) continue;
    seen.add(type);
    if (typeof status === 'string' && CONDITION_STATUSES.has(status)) {
      out[type] = status;
      kept++;
    }
  }
  return kept === 0 ? {} : { conditions: out };
}

/** Two sets of cached conditions are the same when every type has the same status (absent: none). */
export function sameConditions(
  a: Readonly<Record<string, string>> = NO_CONDITIONS,
  b: Readonly<Record<string, string>> = NO_CONDITIONS,
): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

function recordOf(value: unknown): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/** The string-valued entries of a map (labels, annotations, capacity); anything else is dropped. */
function stringsOf(value: unknown): Record<string, string> {
  // No prototype: a key such as `__proto__` is just a key.
  const out = Object.create(null) as Record<string, string>;
  for (const [key, entry] of Object.entries(recordOf(value))) if (typeof entry === 'string') out[key] = entry;
  return out;
}
