/**
 * Device taints, level-triggered: every pass (while leading) reads the rules this controller
 * owns and, in one list, the ResourceSlices (when a node with devices to taint needs them),
 * then creates the rules missing, replaces those that differ and deletes those no longer
 * wanted. With the breaker open nothing new is tainted (no create, no replace) but removals on
 * recovery go on; a dry run reports each would-be write once and writes nothing. Turned off
 * (deviceTaints.enabled false), the rules are removed once. Failures are counted and logged;
 * the next pass tries again. Every rule written names the granting ClusterRole as its owner
 * (client.ts), read once per pass that writes; a rule of an older version, or of a grant since
 * recreated, is replaced to name it, so the garbage collector removes the rules with the grant.
 */
import { K8sApiError, describeError, isConflict, type Logger } from '../../../platform/index.js';
import type { EventRecorder } from '../../node-status/index.js';
import type { RemediationConfig } from '../config.js';
import type { RemediationMetrics } from '../metrics.js';
import type { DeviceTaintClient, RuleOwner, StoredRule } from './client.js';
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  desiredDeviceTaints,
  devicesToTaint,
  nodesToTaint,
  type DesiredRule,
  type DeviceTaintNode,
  type UnmatchedWhy,
} from './desired.js';
import { parseResourceSlice, type ResourceSliceView } from './resource-slices.js';

/** What the reconciler is built from. */
export interface DeviceTaintDeps {
  client: DeviceTaintClient;
  events: EventRecorder;
  log: Logger;
  metrics: RemediationMetrics;
  /** The term's fence. */
  leading(): boolean;
}

/** What one pass hands over. */
export interface DeviceTaintInput {
  nodes: readonly DeviceTaintNode[];
  config: RemediationConfig;
  /** The breaker as the pass left it: open, nothing new is tainted. */
  breakerOpen: boolean;
  /** The pass's time (ms). */
  now: number;
}

/** The device taints of one term. */
export interface DeviceTaintReconciler {
  /** One reconcile; never rejects. */
  reconcile(input: DeviceTaintInput, signal: AbortSignal): Promise<void>;
}

const UNMATCHED: readonly UnmatchedWhy[] = ['no-identifier', 'no-device', 'ambiguous'];

/** How long a node's rules outlive its ResourceSlices (a DRA driver restarting republishes them). */
export const SLICE_GRACE_MS = 60_000;

/** The command that removes this controller's rules by hand (logs, docs). */
const REMOVE_BY_HAND = `kubectl delete devicetaintrules -l ${MANAGED_BY_LABEL}=${MANAGED_BY}`;

/** Creates the reconciler of one term. */
export function createDeviceTaintReconciler(deps: DeviceTaintDeps): DeviceTaintReconciler {
  const { client, events, log, metrics } = deps;
  /** What was last said (logged once per change): unmatched devices, refused slices, dry-run writes. */
  let said = new Set<string>();
  const count = (action: string, result: string): void => metrics.deviceTaintWrites.inc({ action, result });
  const nodeObject = (node: string) => ({ apiVersion: 'v1', kind: 'Node', name: node, uid: node });

  /** When each node's slices were last seen (the grace of a driver restarting). */
  const slicesSeenAt = new Map<string, number>();
  /** The first pass of this term: a node not seen since counts as seen then. */
  let startedAt: number | undefined;
  /** Whether the rules were removed since device taints were last turned off. */
  let cleared = false;

  /**
   * Every ResourceSlice, in one list; `nodes` (those that need theirs) whose slices cannot
   * all be read are returned apart.
   */
  const readSlices = async (
    nodes: readonly string[],
    signal: AbortSignal,
    saying: Set<string>,
  ): Promise<{ slices: ResourceSliceView[]; unreadable: Set<string>; invalid: number }> => {
    const slices: ResourceSliceView[] = [];
    const unreadable = new Set<string>();
    let invalid = 0;
    let objects: unknown[];
    try {
      objects = await client.listSlices(signal);
    } catch (error) {
      if (signal.aborted) throw error;
      count('list-slices', 'error');
      const err = describeError(error);
      const what = `unreadable ${err}`;
      saying.add(what);
      if (!said.has(what))
        log.warn(
          { err, nodes: nodes.length },
          'ResourceSlices unreadable; the nodes keep their device taints',
        );
      return { slices, unreadable: new Set(nodes), invalid };
    }
    for (const object of objects) {
      const parsed = parseResourceSlice(object);
      if ('slice' in parsed) {
        slices.push(parsed.slice);
        continue;
      }
      invalid++;
      // Its node, if it can be told: that node keeps its rules; if not, every node does.
      const node = (object as { spec?: { nodeName?: unknown } } | null)?.spec?.nodeName;
      for (const affected of typeof node === 'string' ? [node] : nodes) unreadable.add(affected);
      const what = `invalid ${parsed.error}`;
      saying.add(what);
      if (!said.has(what))
        log.warn({ node, err: parsed.error }, 'ResourceSlice refused; the node keeps its device taints');
    }
    return { slices, unreadable, invalid };
  };

  const write = async (
    action: 'create' | 'replace' | 'delete',
    rule: { name: string; node: string | undefined },
    request: () => Promise<void>,
    signal: AbortSignal,
  ): Promise<boolean> => {
    if (!deps.leading() || signal.aborted) return false;
    try {
      await request();
      count(action, 'ok');
      return true;
    } catch (error) {
      if (signal.aborted) return false;
      count(action, isConflict(error) ? 'conflict' : 'error');
      log.warn(
        { err: describeError(error), rule: rule.name, node: rule.node, action },
        'device taint write failed; the next pass tries again',
      );
      return false;
    }
  };

  const dryRun = (
    action: string,
    rule: { name: string; node: string | undefined },
    saying: Set<string>,
  ): void => {
    const what = `dry-run ${action} ${rule.name}`;
    saying.add(what);
    if (said.has(what)) return;
    count(action, 'dry-run');
    log.info({ rule: rule.name, node: rule.node, action }, 'dry run: would write a device taint');
    if (rule.node !== undefined)
      events.record(
        nodeObject(rule.node),
        'Normal',
        'RemediationDryRun',
        `would ${action} DeviceTaintRule ${rule.name}`,
      );
  };

  const reconcile = async (input: DeviceTaintInput, signal: AbortSignal): Promise<void> => {
    const { config, now } = input;
    const saying = new Set<string>();
    startedAt ??= now;
    const owned = await client.listOwnedRules(signal);
    // With the breaker open nothing is created: only nodes with rules need their slices (to
    // tell which rules are still wanted); with no node needing them, nothing is listed.
    const ruled = new Set(owned.map((rule) => rule.node));
    const needed: string[] = [];
    const toTaint = new Set(nodesToTaint(input.nodes, config));
    for (const node of input.nodes.filter((n) => toTaint.has(n.name))) {
      if (!input.breakerOpen || ruled.has(node.name)) needed.push(node.name);
      // Held back unread: each device counts as a create the breaker stopped.
      else
        metrics.deviceTaintWrites.inc(
          { action: 'create', result: 'breaker-open' },
          devicesToTaint(node, config).length,
        );
    }
    const read =
      needed.length > 0
        ? await readSlices(needed, signal, saying)
        : { slices: [], unreadable: new Set<string>(), invalid: 0 };
    const published = new Set(read.slices.map((slice) => slice.nodeName));
    for (const node of published) if (node !== undefined) slicesSeenAt.set(node, now);
    // A node whose slices are gone a short while (its DRA driver restarting) keeps its rules.
    for (const node of needed)
      if (!published.has(node) && now - (slicesSeenAt.get(node) ?? startedAt) < SLICE_GRACE_MS)
        read.unreadable.add(node);
    const desired = desiredDeviceTaints(input.nodes, read.slices, config, client.owner);
    metrics.invalidSlices.set(read.invalid);
    metrics.deviceTaintRules.set(owned.length);
    for (const why of UNMATCHED)
      metrics.unmatchedDevices.set({ why }, desired.unmatched.filter((u) => u.why === why).length);
    for (const unmatched of desired.unmatched) {
      const what = `unmatched ${unmatched.node} ${unmatched.deviceKey} ${unmatched.why}`;
      saying.add(what);
      if (!said.has(what))
        log.warn(
          { node: unmatched.node, device: unmatched.deviceKey, why: unmatched.why },
          'device to taint matches no single ResourceSlice device; not tainted',
        );
    }

    const stored = new Map(owned.map((rule) => [rule.name, rule]));
    const wanted = new Set(desired.rules.map((rule) => rule.name));
    // The grant the rules are dependents of: read only by a pass that may write.
    const grant =
      desired.rules.length > 0 && !input.breakerOpen && !config.dryRun
        ? await grantOwner(signal, saying)
        : undefined;
    for (const rule of desired.rules) {
      const existing = stored.get(rule.name);
      if (existing && same(existing, rule) && (grant === undefined || existing.ownerUids.includes(grant.uid)))
        continue;
      const action = existing ? 'replace' : 'create';
      if (input.breakerOpen) {
        count(action, 'breaker-open');
        continue;
      }
      if (config.dryRun) {
        dryRun(action, rule, saying);
        continue;
      }
      const done = await write(
        action,
        rule,
        () =>
          existing
            ? client.replace(rule, existing.resourceVersion, signal, grant)
            : client.create(rule, signal, grant),
        signal,
      );
      if (done) {
        log.info(
          {
            rule: rule.name,
            node: rule.node,
            device: rule.deviceKey,
            driver: rule.driver,
            pool: rule.pool,
            slice_device: rule.device,
            effect: rule.taint.effect,
          },
          'device tainted',
        );
        events.record(
          nodeObject(rule.node),
          'Warning',
          'DeviceTainted',
          `device ${rule.deviceKey} (${rule.driver}/${rule.pool}/${rule.device}) tainted ${rule.taint.key}=${rule.taint.value}:${rule.taint.effect} by DeviceTaintRule ${rule.name}`,
        );
      }
    }
    for (const rule of owned) {
      if (wanted.has(rule.name)) continue;
      if (rule.node !== undefined && (desired.keep.has(rule.node) || read.unreadable.has(rule.node)))
        continue;
      if (config.dryRun) {
        dryRun('delete', rule, saying);
        continue;
      }
      const done = await write(
        'delete',
        rule,
        () => client.delete(rule.name, rule.resourceVersion, signal),
        signal,
      );
      if (done) {
        log.info({ rule: rule.name, node: rule.node }, 'device taint removed');
        if (rule.node !== undefined)
          events.record(
            nodeObject(rule.node),
            'Normal',
            'DeviceTaintRemoved',
            `DeviceTaintRule ${rule.name} removed: the device recovered`,
          );
      }
    }
    said = saying;
  };

  /** The granting ClusterRole as an owner; undefined (said once) when it cannot be read. */
  const grantOwner = async (signal: AbortSignal, saying: Set<string>): Promise<RuleOwner | undefined> => {
    try {
      const grant = await client.grantOwner(signal);
      if (grant === undefined) {
        saying.add('no grant owner');
        if (!said.has('no grant owner'))
          log.warn(
            { remove: REMOVE_BY_HAND },
            'the ClusterRole granting device taints cannot be read (named otherwise, or no get on it): rules are written without an owner and outlive the grant',
          );
      }
      return grant;
    } catch (error) {
      if (signal.aborted) return undefined;
      count('get-grant', 'error');
      log.warn(
        { err: describeError(error) },
        'the ClusterRole granting device taints not read; rules written without an owner this pass',
      );
      return undefined;
    }
  };

  /** Turned off: every rule this install owns is removed (in a dry run, reported); true when done. */
  const clear = async (config: RemediationConfig, signal: AbortSignal): Promise<boolean> => {
    let owned: StoredRule[];
    try {
      owned = await client.listOwnedRules(signal);
    } catch (error) {
      if (signal.aborted) return false;
      const err = describeError(error);
      // No RBAC (the usual case for an install that never turned them on) or no API: nothing
      // this controller can remove; said once, not retried until turned on and off again.
      if (error instanceof K8sApiError && (error.apiStatus === 403 || error.apiStatus === 404)) {
        log.info(
          { err, remove: REMOVE_BY_HAND },
          'device taints off; their rules cannot be listed, any left must be removed by hand',
        );
        return true;
      }
      count('list', 'error');
      log.warn({ err }, 'device taints off; their rules not listed, the next pass tries again');
      return false;
    }
    metrics.deviceTaintRules.set(owned.length);
    let done = true;
    for (const rule of owned) {
      if (config.dryRun) {
        dryRun('delete', rule, new Set());
        continue;
      }
      const deleted = await write(
        'delete',
        rule,
        () => client.delete(rule.name, rule.resourceVersion, signal),
        signal,
      );
      done &&= deleted;
      if (deleted) {
        log.info({ rule: rule.name, node: rule.node }, 'device taint removed: device taints turned off');
        if (rule.node !== undefined)
          events.record(
            nodeObject(rule.node),
            'Normal',
            'DeviceTaintRemoved',
            `DeviceTaintRule ${rule.name} removed: device taints turned off`,
          );
      }
    }
    if (done) metrics.deviceTaintRules.set(0);
    return done;
  };

  /** The last failure logged (a 403 without the RBAC would otherwise be logged every pass). */
  let lastFailure: string | undefined;
  return {
    async reconcile(input, signal) {
      if (!deps.leading()) return;
      if (!input.config.deviceTaints.enabled) {
        // Once per change (and per term): then idle until turned on again.
        if (!cleared) cleared = await clear(input.config, signal);
        return;
      }
      cleared = false;
      try {
        await reconcile(input, signal);
        lastFailure = undefined;
      } catch (error) {
        if (signal.aborted) return;
        count('list', 'error');
        const err = describeError(error);
        if (err !== lastFailure)
          log.warn(
            { err },
            'device taints not reconciled; the next pass tries again (logged again when the error changes)',
          );
        lastFailure = err;
      }
    },
  };
}

/** Whether the stored rule already selects and taints as wanted. */
function same(stored: StoredRule, rule: DesiredRule): boolean {
  return (
    stored.node === rule.node &&
    stored.driver === rule.driver &&
    stored.pool === rule.pool &&
    stored.device === rule.device &&
    stored.taint.key === rule.taint.key &&
    stored.taint.value === rule.taint.value &&
    stored.taint.effect === rule.taint.effect
  );
}
