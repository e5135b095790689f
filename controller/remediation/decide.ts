/**
 * Self-healing's decision step (NVSentinel's "decide, then act"): published state and node
 * facts in, actions out. Pure: no I/O, time passed in, so every rule here is tested without a
 * cluster and the executor (execute.ts) is the only code that changes one.
 *
 * Level-triggered: the whole cluster is decided on every pass from what the API holds (the
 * records on Nodes, the breaker ConfigMap), so a new leader, or the same one after a
 * restart, picks up where the last left off.
 */
import type { BreakerState, NodeRecord, PublishedDevice, PublishedNode } from '../../contracts/index.js';
import type { RemediationConfig } from './config.js';
import { heldHot, hotDevices, thermalWhy, type Heat } from './thermal.js';

/** What the decision knows of one Node (from the Node cache). */
export interface NodeFacts {
  readonly name: string;
  readonly accelerator: boolean;
  /** spec.unschedulable, whoever set it. */
  readonly unschedulable: boolean;
  /** Carries the opt-out label. */
  readonly optedOut: boolean;
  /** Carries the maintenance annotation. */
  readonly maintenance: boolean;
  /** Our record (undefined: we do not own this node). */
  readonly record: NodeRecord | undefined;
  /** Set when the node carries a record that does not validate: the node is left alone. */
  readonly recordError?: string;
}

/** Everything one pass decides from. */
export interface DecisionInput {
  readonly now: number;
  readonly config: RemediationConfig;
  /** This replica and its term (written into new records). */
  readonly identity: string;
  readonly term: number;
  readonly nodes: readonly NodeFacts[];
  /** The node's published entry (null: healthy; undefined: never observed). */
  entry(node: string): PublishedNode | null | undefined;
  readonly breaker: BreakerState;
  /** Nodes whose drain runs in this process now. */
  readonly draining: ReadonlySet<string>;
  /** Since when each device has been hot (thermal.ts), for the `thermalEviction` preset. */
  readonly heat: Heat;
}

/** A device that makes its node trigger, and why (written into the node's record). */
export interface TriggeredDevice {
  readonly device: PublishedDevice;
  readonly why: string;
}

/** Why a node was left as it is (logs, metrics, dry-run reports). */
export type SkipReason =
  | 'maintenance'
  | 'opted-out'
  | 'record-invalid'
  | 'not-ours'
  | 'breaker-open'
  | 'manual-uncordon'
  | 'cooldown'
  | 'max-concurrent';

/** One thing to do. Records are the whole new annotation value. */
export type Action =
  | { kind: 'cordon'; node: string; record: NodeRecord }
  | { kind: 'drain'; node: string; record: NodeRecord; resume: boolean }
  | { kind: 'record'; node: string; record: NodeRecord; why: string; untaint?: boolean }
  | { kind: 'uncordon'; node: string; record: NodeRecord }
  | { kind: 'forget'; node: string; why: string }
  | { kind: 'skip'; node: string; why: SkipReason };

/** The outcome of one pass. */
export interface Decision {
  readonly actions: Action[];
  /** The breaker's new state, when it changed (persist it before acting on it). */
  readonly breaker: BreakerState | undefined;
  /** Unhealthy nodes (failed or cordoned by us, or released within the window), sorted. */
  readonly unhealthy: readonly string[];
  /** How many unhealthy nodes (beyond those acknowledged) the breaker tolerates. */
  readonly limit: number;
}

/** Phases in which we hold the node cordoned. */
const HELD = new Set(['cordoned', 'draining', 'drained', 'blocked']);

/** The devices of `entry` that match the trigger; the node triggers when they are enough. */
export function matchingDevices(
  entry: PublishedNode | null | undefined,
  trigger: RemediationConfig['trigger'],
): PublishedNode['npus'] {
  if (!entry) return [];
  const statuses: readonly string[] = trigger.statuses;
  return entry.npus.filter(
    (device) =>
      statuses.includes(device.status) &&
      (trigger.reasons.length === 0 || device.reasons.some((reason) => trigger.reasons.includes(reason))),
  );
}

/**
 * The devices that make a node trigger: those matching the trigger when they are enough, and
 * under the thermal preset each device hot for its hold (one is enough). Empty: it does not.
 */
export function triggeredDevices(
  entry: PublishedNode | null | undefined,
  config: RemediationConfig,
  heat: ReadonlyMap<string, number> | undefined,
  now: number,
): TriggeredDevice[] {
  const matching = matchingDevices(entry, config.trigger);
  const triggered: TriggeredDevice[] =
    matching.length >= config.trigger.minDevices
      ? matching.map((device) => ({ device, why: device.reason ?? device.status }))
      : [];
  if (!config.thermalEviction.enabled) return triggered;
  const listed = new Set(triggered.map((t) => t.device.key));
  for (const held of heldHot(entry, heat, config.thermalEviction.forSeconds, now))
    if (!listed.has(held.device.key)) triggered.push({ device: held.device, why: thermalWhy(held) });
  return triggered;
}

/**
 * Whether a node shows evidence of being healthy again: its agent reports (`ok`) and every
 * listed device is healthy (and, under the thermal preset, none is hot), or it is absent from
 * the document (healthy). A node never observed since this replica started (undefined), a
 * stale agent, or an `unknown` device is no evidence either way: a node is never uncordoned on
 * missing data.
 */
export function recovered(entry: PublishedNode | null | undefined, thermal = false): boolean {
  if (entry === null) return true;
  if (entry === undefined || entry.agent !== 'ok') return false;
  if (thermal && hotDevices(entry).length > 0) return false;
  return entry.npus.every((device) => device.status === 'healthy');
}

/**
 * Whether a node shows trouble: a device failed or degraded, or hot under the thermal preset
 * (a healthy status with `high-temp` only as a signal still counts). Unknown is no evidence.
 */
function troubled(entry: PublishedNode | null | undefined, thermal: boolean): boolean {
  if (thermal && hotDevices(entry).length > 0) return true;
  return entry?.npus.some((device) => device.status === 'failed' || device.status === 'degraded') ?? false;
}

/** The breaker's limit: the configured count, else the percentage of accelerator nodes (at least one). */
export function breakerLimit(breaker: RemediationConfig['breaker'], acceleratorNodes: number): number {
  if (breaker.maxUnhealthyNodes !== undefined) return breaker.maxUnhealthyNodes;
  return Math.max(1, Math.floor((breaker.maxUnhealthyPercent * acceleratorNodes) / 100));
}

/** Decides one pass. */
export function decide(input: DecisionInput): Decision {
  const { now, config } = input;
  const iso = new Date(now).toISOString();
  const ms = (seconds: number): number => seconds * 1000;
  const since = (time: string | null): number => (time === null ? Number.NaN : now - Date.parse(time));

  const thermal = config.thermalEviction.enabled;
  const triggering = new Map<string, TriggeredDevice[]>();
  for (const node of input.nodes) {
    const devices = triggeredDevices(input.entry(node.name), config, input.heat.get(node.name), now);
    if (devices.length > 0) triggering.set(node.name, devices);
  }

  // The breaker counts nodes in trouble: failing now, held by us, or released within the window.
  // With device taints on, a node with a device to taint is failing now too (each device is
  // tainted below trigger.minDevices): a fleet-wide false positive must open the breaker.
  // Nodes in maintenance do not count: planned work must not look like a fault storm.
  const unhealthy = input.nodes
    .filter((node) => !node.maintenance)
    .filter((node) => {
      if (triggering.has(node.name)) return true;
      if (
        config.deviceTaints.enabled &&
        !node.optedOut &&
        matchingDevices(input.entry(node.name), config.trigger).length > 0
      )
        return true;
      const record = node.record;
      if (!record) return false;
      if (HELD.has(record.phase)) return true;
      return since(record.releasedAt) < ms(config.breaker.windowSeconds);
    })
    .map((node) => node.name)
    .sort();
  const acceleratorCount = input.nodes.filter((node) => node.accelerator).length;
  const limit = breakerLimit(config.breaker, acceleratorCount);
  const unhealthySet = new Set(unhealthy);
  const acknowledged = input.breaker.acknowledged.filter((node) => unhealthySet.has(node));
  const acknowledgedSet = new Set(acknowledged);
  const counted = unhealthy.filter((node) => !acknowledgedSet.has(node));
  let breaker: BreakerState = { ...input.breaker, acknowledged };
  if (breaker.state === 'closed' && counted.length > limit) {
    breaker = {
      ...breaker,
      state: 'open',
      openedAt: iso,
      reason: `${counted.length} of ${acceleratorCount} accelerator nodes unhealthy (limit ${limit}): ${preview(counted)}`,
      unhealthy,
    };
  } else if (breaker.state === 'open') {
    const auto = config.breaker.autoResetSeconds;
    if (auto !== undefined && since(breaker.openedAt) >= ms(auto) && counted.length <= limit)
      breaker = { ...breaker, state: 'closed', closedAt: iso, closedBy: 'auto' };
    else breaker = { ...breaker, unhealthy };
  }
  const open = breaker.state === 'open';

  const actions: Action[] = [];
  // Nodes in maintenance or opted out hold no drain slot (their drains are stopped).
  let draining = input.nodes.filter(
    (node) =>
      !node.maintenance &&
      !node.optedOut &&
      (node.record?.phase === 'draining' || input.draining.has(node.name)),
  ).length;
  const skip = (node: string, why: SkipReason): void => void actions.push({ kind: 'skip', node, why });

  for (const node of [...input.nodes].sort((a, b) => a.name.localeCompare(b.name))) {
    const devices = triggering.get(node.name);
    const entry = input.entry(node.name);
    const record = node.record;
    if (node.maintenance) {
      if (devices || record) skip(node.name, 'maintenance');
      continue;
    }
    if (node.optedOut) {
      if (devices || record) skip(node.name, 'opted-out');
      continue;
    }
    if (node.recordError !== undefined) {
      skip(node.name, 'record-invalid');
      continue;
    }
    const cordon = (): void => {
      if (node.unschedulable) return skip(node.name, 'not-ours');
      if (open) return skip(node.name, 'breaker-open');
      actions.push({
        kind: 'cordon',
        node: node.name,
        record: newRecord(node.name, devices ?? [], input, iso),
      });
    };

    if (!record) {
      if (devices) cordon();
      continue;
    }

    // A person uncordoned a node we hold: respect it (or cordon it again, if so configured).
    if (HELD.has(record.phase) && !node.unschedulable) {
      // Our taint goes with it: `kubectl uncordon` leaves taints, and the person meant the node
      // to take pods again.
      if (config.respectManualUncordon)
        actions.push({
          kind: 'record',
          node: node.name,
          record: { ...record, phase: 'overridden', releasedAt: iso, recoveredAt: null, tainted: false },
          why: 'uncordoned by a person',
          untaint: record.tainted,
        });
      else if (!open)
        actions.push({ kind: 'cordon', node: node.name, record: { ...record, phase: 'cordoned' } });
      else skip(node.name, 'breaker-open');
      continue;
    }

    switch (record.phase) {
      case 'overridden':
        if (devices) skip(node.name, 'manual-uncordon');
        else if (recovered(entry, thermal))
          actions.push({
            kind: 'record',
            node: node.name,
            record: { ...record, phase: 'released', recoveredAt: iso },
            why: 'recovered after a manual uncordon',
          });
        continue;
      case 'released':
        if (since(record.releasedAt) < ms(config.nodeCooldownSeconds)) {
          if (devices) skip(node.name, 'cooldown');
        } else if (devices) cordon();
        else actions.push({ kind: 'forget', node: node.name, why: 'cooldown over' });
        continue;
      case 'draining':
        // A drain runs to its end even if the devices recover meanwhile; one that no process
        // runs (a failover, a restart) is resumed, in mode drain only.
        if (config.mode === 'drain' && !input.draining.has(node.name))
          actions.push({ kind: 'drain', node: node.name, record, resume: true });
        continue;
    }

    // A device failed (or stayed hot) since the cordon: its holders must go too (per-device
    // drains), so the record takes it and a finished drain runs again.
    const grown = devices ? newResourceIds(record, devices) : [];
    if (grown.length > 0) {
      actions.push({
        kind: 'record',
        node: node.name,
        record: {
          ...record,
          devices: [...record.devices, ...grown].slice(0, 256),
          phase: 'cordoned',
          since: record.phase === 'cordoned' ? record.since : iso,
          recoveredAt: null,
        },
        why: `more devices failed: ${grown.join(', ')}`,
      });
      continue;
    }

    // cordoned, drained, blocked: held by us.
    if (!devices) {
      if (!config.uncordon.enabled) continue;
      if (!recovered(entry, thermal)) {
        // Trouble below the trigger restarts the hold; missing data (unknown) only pauses it.
        if (record.recoveredAt !== null && troubled(entry, thermal))
          actions.push({
            kind: 'record',
            node: node.name,
            record: { ...record, recoveredAt: null },
            why: 'not healthy yet',
          });
        continue;
      }
      if (record.recoveredAt === null)
        actions.push({
          kind: 'record',
          node: node.name,
          record: { ...record, recoveredAt: iso },
          why: 'devices healthy again',
        });
      else if (since(record.recoveredAt) >= ms(config.uncordon.holdSeconds))
        actions.push({
          kind: 'uncordon',
          node: node.name,
          record: { ...record, phase: 'released', releasedAt: iso },
        });
      continue;
    }
    if (record.recoveredAt !== null) {
      actions.push({
        kind: 'record',
        node: node.name,
        record: { ...record, recoveredAt: null },
        why: 'failed again before the uncordon hold ended',
      });
      continue;
    }
    if (config.mode !== 'drain' || record.phase === 'drained') continue;
    const due =
      record.phase === 'cordoned'
        ? since(record.since) >= ms(config.drain.delaySeconds)
        : since(record.drainFinishedAt) >= ms(config.drain.timeoutSeconds);
    if (!due) continue;
    if (open) {
      skip(node.name, 'breaker-open');
      continue;
    }
    if (draining >= config.maxConcurrent) {
      skip(node.name, 'max-concurrent');
      continue;
    }
    draining++;
    actions.push({
      kind: 'drain',
      node: node.name,
      record: { ...record, phase: 'draining', drainStartedAt: iso, drainFinishedAt: null },
      resume: false,
    });
  }

  const changed = JSON.stringify(breaker) !== JSON.stringify(input.breaker);
  return { actions, breaker: changed ? breaker : undefined, unhealthy, limit };
}

function newRecord(
  node: string,
  devices: readonly TriggeredDevice[],
  input: DecisionInput,
  at: string,
): NodeRecord {
  const reason = devices
    .map(({ device, why }) => `${device.id}: ${why}`)
    .join(', ')
    .slice(0, 1024);
  return {
    phase: 'cordoned',
    by: input.identity,
    term: input.term,
    since: at,
    reason: reason || `${node} failed`,
    devices: resourceIds(devices),
    tainted: input.config.taint,
    drainStartedAt: null,
    drainFinishedAt: null,
    blocking: [],
    recoveredAt: null,
    releasedAt: null,
  };
}

/** The devices' resource ids as a record keeps them (distinct, at most 256 of 256 characters). */
function resourceIds(devices: readonly TriggeredDevice[]): string[] {
  return [...new Set(devices.map(({ device }) => device.resource_id.slice(0, 256)))].slice(0, 256);
}

/** Triggering devices the record does not list yet. */
function newResourceIds(record: NodeRecord, devices: readonly TriggeredDevice[]): string[] {
  const known = new Set(record.devices);
  return resourceIds(devices).filter((id) => !known.has(id));
}

/** The first few names, then a count. */
function preview(names: readonly string[], max = 5): string {
  return names.length <= max
    ? names.join(', ')
    : `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
}
