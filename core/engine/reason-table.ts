/**
 * The engine's reason table: each reason of the contract's catalogue (contracts/reasons.ts)
 * with the check that raises it. reasons.ts compiles a table and a rules value into bit
 * masks and the list of checks the per-sample path runs (evaluate.ts); nothing else in the
 * engine names a device reason, so a reason is one catalogue entry plus its check here
 * (docs/architecture.md, "How to add a reason").
 *
 * A check is built once per rules value (thresholds and bits captured), then called on every
 * sample of every device: it returns the bits it raises, may keep memory on the device, and
 * allocates nothing. Reasons that share a reading or a memory (a link down with or without
 * power, an ECC increase above or below 75 °C, the XIDs of both severities) are raised by one
 * check; the others name it in `by`.
 */
import {
  DEFAULT_FAULT_CODES,
  REASONS,
  type DeviceObservation,
  type DeviceReasonId,
  type DeviceReasonSpec,
  type NodeProblemReason,
  type NodeReasonId,
  type NodeReasonSpec,
  type Rules,
  type Severity,
  type Snapshot,
} from '../../contracts/index.js';
import { eventsInWindow, recordEvent, type DeviceState } from './state.js';
import { inWindow, increased, nextBaseline, popcount, pushSample, windowMask } from './window.js';

/** One sample of one device → the bits a check raises. */
export type SampleCheck = (device: DeviceState, obs: DeviceObservation) => number;

/** One fresh snapshot of a node → whether a node reason holds. */
export type NodeCheck = (snapshot: Snapshot) => boolean;

/** What a check is built from. */
export interface CheckContext {
  readonly rules: Rules;
  /** The bit of a reason id or a family member's name (`xid-79`); 0 when the rules leave it out. */
  bit(id: string): number;
}

/** How a device reason is raised: by its own check, or by another entry's (`by`: its id). */
export type DeviceRaise = { readonly check: (ctx: CheckContext) => SampleCheck } | { readonly by: string };

/**
 * How a node reason is raised: by a check of each fresh snapshot, by the engine itself (a
 * timer, the Node's Ready condition), or by the Node's conditions the controller passes
 * (`conditions`: a family whose members are the rules' `node_conditions`).
 */
export type NodeRaise =
  { readonly check: (rules: Rules) => NodeCheck } | { readonly by: 'engine' } | { readonly by: 'conditions' };

/** A reason the engine can raise: a catalogue entry and how. */
export type ReasonEntry =
  (DeviceReasonSpec & { readonly raise: DeviceRaise }) | (NodeReasonSpec & { readonly raise: NodeRaise });

/** `npu-offline` or `pcie-link-down`: a link down without power (or unread) is a card gone. */
const linkDown = (ctx: CheckContext): SampleCheck => {
  const offline = ctx.bit('npu-offline');
  const down = ctx.bit('pcie-link-down');
  const minW = ctx.rules.offline_power_w;
  return (_, obs) => {
    if (obs.pcie_link_status !== 'down') return 0;
    return obs.power_w === null || obs.power_w < minW ? offline : down;
  };
};

const missing = (ctx: CheckContext): SampleCheck => {
  const bit = ctx.bit('device-missing');
  return (_, obs) => (obs.present ? 0 : bit);
};

/** `ecc-uncorrectable`: the counter increased within the window. */
const uncorrectable = (ctx: CheckContext): SampleCheck => {
  const bit = ctx.bit('ecc-uncorrectable');
  const size = ctx.rules.window_samples;
  return (device, obs) => {
    if (increased(device.uncBase, obs.ecc_uncorrectable)) device.uncAt = device.n;
    device.uncBase = nextBaseline(device.uncBase, obs.ecc_uncorrectable);
    return inWindow(device.n, device.uncAt, size) ? bit : 0;
  };
};

/** `health-critical` or `health-warning`, as the driver reports. */
const health = (ctx: CheckContext): SampleCheck => {
  const critical = ctx.bit('health-critical');
  const warning = ctx.bit('health-warning');
  return (_, obs) => {
    const h = obs.health;
    return h === 'critical' ? critical : h === 'warning' || h === 'alarm' ? warning : 0;
  };
};

/**
 * `xid-<n>` of both severities: a watched XID event is new when its (xid, at) was not in the
 * device's previous sample, so an agent's rolling list does not fire it again.
 */
const xids = (ctx: CheckContext): SampleCheck => {
  const bitOf = new Map<number, number>();
  let all = 0;
  for (const n of ctx.rules.xids.watched) {
    const bit = ctx.bit(`xid-${n}`);
    if (bit !== 0) bitOf.set(n, bit);
    all |= bit;
  }
  const size = ctx.rules.window_samples;
  return (device, obs) => {
    if (obs.xids.length > 0 || device.xidSeen !== null) recordXids(device, obs, bitOf);
    return device.eventAt === null ? 0 : eventsInWindow(device, all, size);
  };
};

function recordXids(device: DeviceState, obs: DeviceObservation, bitOf: ReadonlyMap<number, number>): void {
  const previous = device.xidSeen;
  const seen = obs.xids.length > 0 ? new Set<string>() : null;
  for (const event of obs.xids) {
    const bit = bitOf.get(event.xid);
    if (bit === undefined) continue;
    const id = `${event.xid}@${event.at ?? ''}`;
    seen?.add(id);
    if (!previous?.has(id)) recordEvent(device, bit);
  }
  device.xidSeen = seen !== null && seen.size > 0 ? seen : null;
}

/** One `fault-code`: critical when any listed code is, else warning (CONTRACT §3.9). */
const faultCodes = (ctx: CheckContext): SampleCheck => {
  const levels = new Map<string, Severity>(Object.entries(DEFAULT_FAULT_CODES));
  for (const [code, severity] of Object.entries(ctx.rules.fault_codes))
    levels.set(code.toUpperCase(), severity);
  const otherwise = ctx.rules.fault_codes_default;
  const critical = ctx.bit('fault-code:critical');
  const warning = ctx.bit('fault-code:warning');
  return (_, obs) => {
    if (obs.error_codes.length === 0) return 0;
    for (const code of obs.error_codes) {
      if ((levels.get(code.toUpperCase()) ?? otherwise) === 'critical') return critical;
    }
    return warning;
  };
};

/** `ecc-thermal` or `ecc-error`: the ECC counter increased within the window, above 75 °C or not now. */
const ecc = (ctx: CheckContext): SampleCheck => {
  const thermal = ctx.bit('ecc-thermal');
  const error = ctx.bit('ecc-error');
  const size = ctx.rules.window_samples;
  const thermalC = ctx.rules.ecc_thermal_c;
  return (device, obs) => {
    if (increased(device.eccBase, obs.ecc_errors)) device.eccAt = device.n;
    device.eccBase = nextBaseline(device.eccBase, obs.ecc_errors);
    if (!inWindow(device.n, device.eccAt, size)) return 0;
    const temp = obs.temperature_c;
    return temp !== null && temp > thermalC ? thermal : error;
  };
};

/** `high-temp`: at least `min_samples` of the window strictly above the threshold. */
const highTemp = (ctx: CheckContext): SampleCheck => {
  const bit = ctx.bit('high-temp');
  const mask = windowMask(ctx.rules.window_samples);
  const { threshold_c: hotC, min_samples: minHot } = ctx.rules.high_temp;
  return (device, obs) => {
    const temp = obs.temperature_c;
    device.hot = pushSample(device.hot, temp !== null && temp > hotC, mask);
    return popcount(device.hot) >= minHot ? bit : 0;
  };
};

/** The node's inference canary, copied onto each of its devices by normalisation. */
const canary = (ctx: CheckContext): SampleCheck => {
  const bit = ctx.bit('inference-canary-failed');
  const min = ctx.rules.inference_canary.min_failures;
  return (_, obs) => ((obs.inference_canary_failures ?? 0) >= min ? bit : 0);
};

/**
 * A node problem the agent reports (payload `node_problems`): holds while the node's latest
 * snapshot carries it. A snapshot of an older agent carries none.
 */
const reported =
  (name: NodeProblemReason): ((rules: Rules) => NodeCheck) =>
  () =>
  (snapshot) => {
    const problems = snapshot.payload.node_problems;
    if (problems === undefined) return false;
    for (const p of problems) if (p.reason === name) return true;
    return false;
  };

/** How each reason of the catalogue is raised. */
const RAISES: { readonly [id in DeviceReasonId]: DeviceRaise } & {
  readonly [id in NodeReasonId]: NodeRaise;
} = {
  'npu-offline': { check: linkDown },
  'device-missing': { check: missing },
  'pcie-link-down': { by: 'npu-offline' },
  'ecc-uncorrectable': { check: uncorrectable },
  'health-critical': { check: health },
  'xid:critical': { check: xids },
  'fault-code:critical': { check: faultCodes },
  'ecc-thermal': { by: 'ecc-error' },
  'high-temp': { check: highTemp },
  'ecc-error': { check: ecc },
  'health-warning': { by: 'health-critical' },
  'fault-code:warning': { by: 'fault-code:critical' },
  'xid:warning': { by: 'xid:critical' },
  'inference-canary-failed': { check: canary },
  'agent-unreachable': { by: 'engine' },
  'node-not-ready': { by: 'engine' },
  'collector-error': { by: 'engine' },
  'network-unreachable': { check: reported('network-unreachable') },
  'nic-link-down': { check: reported('nic-link-down') },
  'rdma-port-down': { check: reported('rdma-port-down') },
  'nvlink-down': { check: reported('nvlink-down') },
  'host-memory-ecc': { check: reported('host-memory-ecc') },
  'kernel-machine-check': { check: reported('kernel-machine-check') },
  'kernel-soft-lockup': { check: reported('kernel-soft-lockup') },
  'kernel-hung-task': { check: reported('kernel-hung-task') },
  'oom-kill-storm': { check: reported('oom-kill-storm') },
  'filesystem-readonly': { check: reported('filesystem-readonly') },
  'filesystem-error': { check: reported('filesystem-error') },
  'filesystem-full': { check: reported('filesystem-full') },
  'host-hardware-fault': { check: reported('host-hardware-fault') },
  'host-hardware-warning': { check: reported('host-hardware-warning') },
  'node-condition': { by: 'conditions' },
};

/** The product's reason table: the catalogue, in its order, each reason with how it is raised. */
export const REASON_TABLE: readonly ReasonEntry[] = REASONS.map(
  (spec) => ({ ...spec, raise: RAISES[spec.id] }) as ReasonEntry,
);
