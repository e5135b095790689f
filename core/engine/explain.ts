/**
 * `explain`: the engine's per-device state rendered for a person (`npu-fault explain`),
 * which the published document does not carry: the rule behind each active reason with the
 * thresholds in force, the smoothing window, the timers running and when they fire, the
 * latches and how to clear them. Pure: reads state, never changes it; time is an argument.
 */
import type { Rules } from '../../contracts/index.js';
import type {
  DeviceExplanation,
  DeviceStatus,
  ExplainedNodeReason,
  ExplainedReason,
  ExplainedTimer,
  ExplainedWindow,
  Explanation,
  NotTracked,
} from './api.js';
import { compareText, publishedReason } from './document.js';
import type { Withheld } from './budget.js';
import type { FsmTiming } from './fsm.js';
import { AGENT_UNREACHABLE, COLLECTOR_ERROR, overlayNames, publishedStatus } from './overlays.js';
import { firstBit, reasonNames, type ReasonTable } from './reasons.js';
import type { DeviceState, NodeState } from './state.js';
import { formatTimestamp } from './time.js';
import { inWindow } from './window.js';

/** What explain needs of the compiled rules. */
export interface ExplainContext {
  rules: Rules;
  table: ReasonTable;
  timing: FsmTiming;
  staleMs: number;
  collectorMs: number;
  /** Why the last document rendered did not list the node although it is not healthy; null when it did (or was never rendered). */
  withheld: Withheld | null;
}

/** Explains `node` (undefined: no state) or one of its devices (display id or key). */
export function explainNode(
  name: string,
  node: NodeState | undefined,
  device: string | undefined,
  now: number,
  c: ExplainContext,
): Explanation {
  if (node === undefined || node.devices.size === 0)
    return notTracked(name, device, `node "${name}" is not tracked: the engine has no device state for it`);
  const devices = [...node.devices.values()].filter(
    (d) => device === undefined || d.id === device || d.key === device,
  );
  if (devices.length === 0)
    return notTracked(name, device, `device "${device}" is not tracked on node "${name}"`);
  devices.sort((a, b) => compareText(a.id, b.id));
  const lastT = Number.isNaN(node.lastT) ? null : node.lastT;
  return {
    tracked: true,
    node: name,
    now: formatTimestamp(now),
    last_seen: Number.isNaN(node.lastSeen) ? null : formatTimestamp(node.lastSeen),
    last_collected_at: lastT === null ? null : formatTimestamp(lastT),
    boot_id: node.boot.bootId,
    seq: node.boot.bootId === null ? null : node.boot.lastSeq,
    samples: node.sampleNo,
    overlays: overlayNames(node.overlays, c.table.nodes),
    node_reasons: nodeReasons(node, c.table),
    withheld: c.withheld,
    timers: overlayTimers(node, now, c),
    devices: devices.map((d) => explainDevice(name, node, d, lastT, c)),
  };
}

/** The node's reasons with their rules, and what the agent saw for its node problems. */
function nodeReasons(node: NodeState, table: ReasonTable): ExplainedNodeReason[] {
  const out: ExplainedNodeReason[] = [];
  for (let rest = node.overlays; rest !== 0; rest &= rest - 1) {
    const bit = firstBit(rest);
    const reason = table.nodes.names[bit] ?? '';
    const seen = node.problems?.find((p) => p.reason === reason);
    out.push({ reason, rule: table.nodes.rules[bit] ?? '', message: seen?.message ?? '' });
  }
  return out;
}

function notTracked(node: string, device: string | undefined, message: string): NotTracked {
  return { tracked: false, node, device: device ?? null, message };
}

/** The pending agent-unreachable and collector-error deadlines (receiver clock). */
function overlayTimers(node: NodeState, now: number, c: ExplainContext): ExplainedTimer[] {
  const out: ExplainedTimer[] = [];
  const timer = (overlay: number, at: number): void => {
    const i = firstBit(overlay);
    out.push({
      name: c.table.nodes.names[i] ?? '',
      from: null,
      to: 'unknown',
      at: formatTimestamp(at),
      in_ms: Math.max(0, at - now),
      clock: 'receiver',
      condition: c.table.nodes.rules[i] ?? '',
    });
  };
  if ((node.overlays & AGENT_UNREACHABLE) === 0 && !Number.isNaN(node.lastSeen))
    timer(AGENT_UNREACHABLE, node.lastSeen + c.staleMs);
  if ((node.overlays & COLLECTOR_ERROR) === 0 && !Number.isNaN(node.cachedSince))
    timer(COLLECTOR_ERROR, node.cachedSince + c.collectorMs);
  return out;
}

function explainDevice(
  nodeName: string,
  node: NodeState,
  d: DeviceState,
  lastT: number | null,
  c: ExplainContext,
): DeviceExplanation {
  const { table } = c;
  const status = publishedStatus(d.state, node.overlays, table.nodes);
  const latched = reasonNames(table, d.latched);
  return {
    id: d.id,
    key: d.key,
    resource_id: d.resourceId,
    model: d.model,
    status,
    status_since: formatTimestamp(d.publishedSince),
    reason: publishedReason(d, node.overlays, table),
    state: d.state,
    state_since: formatTimestamp(d.since),
    decided_by: decidedBy(d, status, node.overlays, c),
    active: activeReasons(d, c),
    temperature_c: d.temperature,
    power_w: d.power,
    ecc_errors: d.ecc,
    pcie_link_status: d.link,
    window: windowOf(d, c),
    timers: stateTimers(d, lastT ?? d.since, c),
    clean_samples: d.clean,
    recover_after_samples: c.timing.recoverSamples,
    latched,
    clear: latched.length > 0 ? `npu-fault clear ${nodeName}/${d.id}` : null,
    pods: node.holders === null ? null : [...(node.holders.get(d.resourceId) ?? [])],
  };
}

function activeReasons(d: DeviceState, c: ExplainContext): ExplainedReason[] {
  const out: ExplainedReason[] = [];
  const seen = new Set<string>();
  for (let rest = d.active; rest !== 0; rest &= rest - 1) {
    const bit = 1 << firstBit(rest);
    const name = c.table.names[firstBit(rest)];
    if (name === undefined || seen.has(`${name}:${bit & c.table.critical}`)) continue;
    seen.add(`${name}:${bit & c.table.critical}`);
    const critical = (bit & c.table.critical) !== 0;
    out.push({
      name,
      severity: critical ? 'critical' : 'warning',
      latched: (bit & d.latched) !== 0,
      rule: ruleOf(bit, c),
    });
  }
  return out;
}

/** The rule behind one reason bit, with the thresholds of the rules in force. */
function ruleOf(bit: number, c: ExplainContext): string {
  return c.table.rules[firstBit(bit)] ?? 'rule unknown';
}

/** The state machine row that put the device in its state, or the overlay that overrides it. */
function decidedBy(d: DeviceState, status: DeviceStatus, overlays: number, c: ExplainContext): string {
  const { rules } = c;
  if (status !== d.state)
    return `overlay ${overlayNames(overlays & c.table.nodes.overlay, c.table.nodes).join(', ')}: a node overlay publishes any state but failed as unknown`;
  switch (d.state) {
    case 'healthy':
      return d.active === 0 ? 'no reason active' : 'only reasons that have not changed the status (signals)';
    case 'unknown':
      return 'no clean sample yet (a reason has been active since the first sample)';
    case 'degraded':
      return `a warning (${d.cause ?? 'unknown'}) active in every sample for at least ${rules.degrade_after_s} s`;
    case 'failed':
      return d.causeCritical
        ? `critical reason ${d.cause ?? 'unknown'} active: failed at once`
        : `degraded for at least ${rules.fail_after_degraded_s} s with a reason still active (${d.cause ?? 'unknown'})`;
  }
}

function windowOf(d: DeviceState, c: ExplainContext): ExplainedWindow {
  const size = c.rules.window_samples;
  const inside = Math.min(d.n, size);
  const hot: boolean[] = [];
  for (let i = inside - 1; i >= 0; i--) hot.push(((d.hot >>> i) & 1) === 1);
  const events: { name: string; samples_ago: number }[] = [];
  const event = (name: string | undefined, at: number): void => {
    if (name !== undefined && Number.isFinite(at) && inWindow(d.n, at, size))
      events.push({ name, samples_ago: d.n - at });
  };
  event('ecc-error', d.eccAt);
  event('ecc-uncorrectable', d.uncAt);
  if (d.eventAt !== null) {
    for (let rest = c.table.events; rest !== 0; rest &= rest - 1) {
      const i = firstBit(rest);
      event(c.table.names[i], d.eventAt[i] ?? Number.NEGATIVE_INFINITY);
    }
  }
  return {
    size,
    samples: d.n,
    high_temp: {
      threshold_c: c.rules.high_temp.threshold_c,
      min_samples: c.rules.high_temp.min_samples,
      hot,
      count: hot.filter(Boolean).length,
    },
    events,
    ecc_baseline: d.eccBase,
    ecc_uncorrectable_baseline: d.uncBase,
  };
}

/** The state machine's timers (sample clock): warning run → degraded, degraded → failed. */
function stateTimers(d: DeviceState, lastT: number, c: ExplainContext): ExplainedTimer[] {
  const { timing, rules } = c;
  const timer = (
    name: string,
    from: DeviceStatus,
    to: DeviceStatus,
    at: number,
    condition: string,
  ): ExplainedTimer => ({
    name,
    from,
    to,
    at: formatTimestamp(at),
    in_ms: Math.max(0, at - lastT),
    clock: 'collected_at',
    condition,
  });
  if ((d.state === 'unknown' || d.state === 'healthy') && !Number.isNaN(d.warnSince))
    return [
      timer(
        'degraded',
        d.state,
        'degraded',
        d.warnSince + timing.degradeMs,
        `a warning stays active in every sample (run began ${formatTimestamp(d.warnSince)}); no critical reason`,
      ),
    ];
  if (d.state === 'degraded' && (d.active & ~(timing.degradeOnly ?? 0)) !== 0)
    return [
      timer(
        'failed',
        'degraded',
        'failed',
        d.since + timing.failMs,
        `still degraded after ${rules.fail_after_degraded_s} s with a reason active in that sample`,
      ),
    ];
  return [];
}
