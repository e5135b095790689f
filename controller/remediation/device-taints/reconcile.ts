/**
 * Device taints, level-triggered: every pass (while leading) reads the ResourceSlices of the
 * nodes with devices to taint and the rules this controller owns, then creates the rules
 * missing, replaces those that differ and deletes those no longer wanted. With the breaker
 * open nothing new is tainted (no create, no replace) but removals on recovery go on; a dry
 * run reports each would-be write once and writes nothing. Failures are counted and logged;
 * the next pass tries again.
 */
import { describeError, isConflict, type Logger } from '../../../platform/index.js';
import type { EventRecorder } from '../../node-status/index.js';
import type { RemediationConfig } from '../config.js';
import type { RemediationMetrics } from '../metrics.js';
import type { DeviceTaintClient, StoredRule } from './client.js';
import {
  desiredDeviceTaints,
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
}

/** The device taints of one term. */
export interface DeviceTaintReconciler {
  /** One reconcile; never rejects. */
  reconcile(input: DeviceTaintInput, signal: AbortSignal): Promise<void>;
}

const UNMATCHED: readonly UnmatchedWhy[] = ['no-identifier', 'no-device', 'ambiguous'];

/** Creates the reconciler of one term. */
export function createDeviceTaintReconciler(deps: DeviceTaintDeps): DeviceTaintReconciler {
  const { client, events, log, metrics } = deps;
  /** What was last said (logged once per change): unmatched devices, refused slices, dry-run writes. */
  let said = new Set<string>();
  const count = (action: string, result: string): void => metrics.deviceTaintWrites.inc({ action, result });
  const nodeObject = (node: string) => ({ apiVersion: 'v1', kind: 'Node', name: node, uid: node });

  /** The slices of `nodes`; nodes whose slices cannot all be read are returned apart. */
  const readSlices = async (
    nodes: readonly string[],
    signal: AbortSignal,
    saying: Set<string>,
  ): Promise<{ slices: ResourceSliceView[]; unreadable: Set<string>; invalid: number }> => {
    const slices: ResourceSliceView[] = [];
    const unreadable = new Set<string>();
    let invalid = 0;
    for (const node of nodes) {
      try {
        for (const object of await client.listSlices(node, signal)) {
          const parsed = parseResourceSlice(object);
          if ('slice' in parsed) {
            slices.push(parsed.slice);
            continue;
          }
          invalid++;
          unreadable.add(node);
          const what = `invalid ${parsed.error}`;
          saying.add(what);
          if (!said.has(what))
            log.warn({ node, err: parsed.error }, 'ResourceSlice refused; the node keeps its device taints');
        }
      } catch (error) {
        if (signal.aborted) throw error;
        unreadable.add(node);
        count('list-slices', 'error');
        const err = describeError(error);
        const what = `unreadable ${node} ${err}`;
        saying.add(what);
        if (!said.has(what))
          log.warn({ node, err }, 'ResourceSlices unreadable; the node keeps its device taints');
      }
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
    const { config } = input;
    const saying = new Set<string>();
    const read = await readSlices(nodesToTaint(input.nodes, config), signal, saying);
    const desired = desiredDeviceTaints(input.nodes, read.slices, config);
    const owned = await client.listOwnedRules(signal);
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
    for (const rule of desired.rules) {
      const existing = stored.get(rule.name);
      if (existing && same(existing, rule)) continue;
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
          existing ? client.replace(rule, existing.resourceVersion, signal) : client.create(rule, signal),
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

  /** The last failure logged (a 403 without the RBAC would otherwise be logged every pass). */
  let lastFailure: string | undefined;
  return {
    async reconcile(input, signal) {
      if (!input.config.deviceTaints.enabled || !deps.leading()) return;
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
