/**
 * One sample of one device → its active reasons (CONTRACT §2.1–§2.3), as a ReasonTable
 * bit mask (the node's inference canary, copied onto each device, included). Updates the
 * device's window, counter baselines, XID memory and latches in place; allocates nothing
 * unless the sample carries XID events.
 *
 * Non-latched event reasons (an ECC increase, an XID) stay active while their sample is
 * inside the smoothing window (5 samples), exactly as `ecc-error` is defined; a latched
 * one stays until a new boot or an operator clear. An XID event is new when its (xid, at)
 * was not in the device's previous sample, so an agent's rolling list does not re-fire it.
 */
import type { DeviceObservation } from '../../contracts/index.js';
import type { ReasonTable } from './reasons.js';
import type { DeviceState } from './state.js';
import { inWindow, increased, nextBaseline, popcount, pushSample } from './window.js';

/** Thresholds of one rules value, compiled. */
export interface SampleParams {
  table: ReasonTable;
  windowSize: number;
  windowMask: number;
  hotC: number;
  minHot: number;
  thermalC: number;
  offlineW: number;
  /** Failed canary requests in a row that raise `inference-canary-failed`. */
  canaryFailures: number;
}

/** Evaluates one sample; returns the active reasons (latched included). */
export function evaluateSample(device: DeviceState, obs: DeviceObservation, p: SampleParams): number {
  const t = p.table;
  const n = ++device.n;
  const temp = obs.temperature_c;
  let mask = obs.present ? 0 : t.deviceMissing;

  if (obs.pcie_link_status === 'down') {
    mask |= obs.power_w === null || obs.power_w < p.offlineW ? t.npuOffline : t.pcieLinkDown;
  }

  device.hot = pushSample(device.hot, temp !== null && temp > p.hotC, p.windowMask);
  if (popcount(device.hot) >= p.minHot) mask |= t.highTemp;

  if (increased(device.eccBase, obs.ecc_errors)) device.eccAt = n;
  device.eccBase = nextBaseline(device.eccBase, obs.ecc_errors);
  if (inWindow(n, device.eccAt, p.windowSize))
    mask |= temp !== null && temp > p.thermalC ? t.eccThermal : t.eccError;

  if (increased(device.uncBase, obs.ecc_uncorrectable)) device.uncAt = n;
  device.uncBase = nextBaseline(device.uncBase, obs.ecc_uncorrectable);
  if (inWindow(n, device.uncAt, p.windowSize)) mask |= t.eccUncorrectable;

  const health = obs.health;
  if (health === 'critical') mask |= t.healthCritical;
  else if (health === 'warning' || health === 'alarm') mask |= t.healthWarning;

  if (obs.error_codes.length > 0) mask |= faultCodeBits(obs.error_codes, t);
  if ((obs.inference_canary_failures ?? 0) >= p.canaryFailures) mask |= t.inferenceCanary;
  if (obs.xids.length > 0 || device.xidSeen !== null) recordXids(device, obs, t);
  if (device.xidAt !== null) mask |= activeXids(device, p.windowSize, t);

  device.latched |= mask & t.latched;
  return mask | device.latched;
}

function faultCodeBits(codes: readonly string[], t: ReasonTable): number {
  let severity: 'critical' | 'warning' | null = null;
  for (const code of codes) {
    const level = t.faultCodes.get(code.toUpperCase()) ?? t.faultCodeDefault;
    if (level === 'critical') return t.faultCodeCritical;
    severity = level;
  }
  return severity === null ? 0 : t.faultCodeWarning;
}

function recordXids(device: DeviceState, obs: DeviceObservation, t: ReasonTable): void {
  const previous = device.xidSeen;
  const seen = obs.xids.length > 0 ? new Set<string>() : null;
  for (const event of obs.xids) {
    const bit = t.xidBit.get(event.xid);
    if (bit === undefined) continue;
    const id = `${event.xid}@${event.at ?? ''}`;
    seen?.add(id);
    if (previous?.has(id)) continue;
    device.xidAt ??= new Array<number>(32).fill(Number.NEGATIVE_INFINITY);
    device.xidAt[31 - Math.clz32(bit)] = device.n;
  }
  device.xidSeen = seen !== null && seen.size > 0 ? seen : null;
}

function activeXids(device: DeviceState, windowSize: number, t: ReasonTable): number {
  let mask = 0;
  const at = device.xidAt as number[];
  for (const bit of t.xidBit.values()) {
    const when = at[31 - Math.clz32(bit)] ?? Number.NEGATIVE_INFINITY;
    if (inWindow(device.n, when, windowSize)) mask |= bit;
  }
  return mask;
}
