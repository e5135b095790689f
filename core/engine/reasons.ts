/**
 * Reasons (CONTRACT §2.2, §2.3, §2.6): the registry that turns the rules into bit positions.
 *
 * A device's active reasons are one 32-bit mask whose bit order *is* the publication order
 * of §2.6, so the published `reason` is the lowest set bit and `reasons` is the set bits in
 * order, with no sorting and no per-sample allocation:
 *
 *   npu-offline, device-missing, pcie-link-down, ecc-uncorrectable, health-critical,
 *   xid-<n> (critical, ascending n), fault-code (critical), ecc-thermal, high-temp,
 *   ecc-error, health-warning, fault-code (warning), xid-<n> (warning, ascending n),
 *   inference-canary-failed
 *
 * `inference-canary-failed` is a node's verdict set on each of its devices (the snapshot's
 * `canary`); its severity comes from the rules (`inference_canary.severity`, a warning by
 * default), and it keeps its place in the order whichever it is. The node overlays
 * (`agent-unreachable`, `node-not-ready`, `collector-error`) follow; they live on the node
 * (overlays.ts) and take no device bit.
 */
import { DEFAULT_FAULT_CODES, type Rules, type Severity } from '../../contracts/index.js';
import type { DeviceStatus } from './api.js';

/** The compiled reason registry of one rules value. */
export interface ReasonTable {
  /** Published name of each bit (`fault-code` appears twice: critical and warning). */
  readonly names: readonly string[];
  /** Stable internal id of each bit (`fault-code:critical`), used to remap on a rules reload. */
  readonly ids: readonly string[];
  /** Bits of critical reasons. */
  readonly critical: number;
  /** Bits of latched reasons. */
  readonly latched: number;
  /** Bits of event reasons (active for a window after the event): ECC increases and XIDs. */
  readonly events: number;
  readonly npuOffline: number;
  readonly deviceMissing: number;
  readonly pcieLinkDown: number;
  readonly eccUncorrectable: number;
  readonly healthCritical: number;
  readonly faultCodeCritical: number;
  readonly eccThermal: number;
  readonly highTemp: number;
  readonly eccError: number;
  readonly healthWarning: number;
  readonly faultCodeWarning: number;
  /** The node's inference canary failing (critical or warning, as the rules say). */
  readonly inferenceCanary: number;
  /** XID number → its bit. */
  readonly xidBit: ReadonlyMap<number, number>;
  /** Fault code (upper-case) → severity: the built-in table merged with the rules'. */
  readonly faultCodes: ReadonlyMap<string, Severity>;
  /** Severity of a code in neither table. */
  readonly faultCodeDefault: Severity;
}

/** Builds the registry from rules. Throws only if the rules bypassed their schema. */
export function compileReasons(rules: Rules): ReasonTable {
  const ids: string[] = [];
  const names: string[] = [];
  let critical = 0;
  const add = (id: string, name: string, isCritical: boolean): number => {
    const bit = 1 << ids.length;
    ids.push(id);
    names.push(name);
    if (isCritical) critical |= bit;
    return bit;
  };
  const watched = [...new Set(rules.xids.watched)].sort((a, b) => a - b);
  const criticalXids = new Set(rules.xids.critical);
  const xidBit = new Map<number, number>();
  const addXids = (wantCritical: boolean): void => {
    for (const n of watched) {
      if (criticalXids.has(n) === wantCritical) xidBit.set(n, add(`xid-${n}`, `xid-${n}`, wantCritical));
    }
  };
  const npuOffline = add('npu-offline', 'npu-offline', true);
  const deviceMissing = add('device-missing', 'device-missing', true);
  const pcieLinkDown = add('pcie-link-down', 'pcie-link-down', true);
  const eccUncorrectable = add('ecc-uncorrectable', 'ecc-uncorrectable', true);
  const healthCritical = add('health-critical', 'health-critical', true);
  addXids(true);
  const faultCodeCritical = add('fault-code:critical', 'fault-code', true);
  const eccThermal = add('ecc-thermal', 'ecc-thermal', false);
  const highTemp = add('high-temp', 'high-temp', false);
  const eccError = add('ecc-error', 'ecc-error', false);
  const healthWarning = add('health-warning', 'health-warning', false);
  const faultCodeWarning = add('fault-code:warning', 'fault-code', false);
  addXids(false);
  const inferenceCanary = add(
    'inference-canary-failed',
    'inference-canary-failed',
    rules.inference_canary.severity === 'critical',
  );
  if (ids.length > 32) throw new RangeError(`too many reasons (${ids.length}); at most 32`);

  let latched = 0;
  for (const name of rules.latched) {
    ids.forEach((id, i) => {
      if (names[i] === name || id === name) latched |= 1 << i;
    });
  }
  let events = eccUncorrectable | eccError | eccThermal;
  for (const bit of xidBit.values()) events |= bit;

  const faultCodes = new Map<string, Severity>(Object.entries(DEFAULT_FAULT_CODES));
  for (const [code, severity] of Object.entries(rules.fault_codes))
    faultCodes.set(code.toUpperCase(), severity);

  return {
    names,
    ids,
    critical,
    latched,
    events,
    npuOffline,
    deviceMissing,
    pcieLinkDown,
    eccUncorrectable,
    healthCritical,
    faultCodeCritical,
    eccThermal,
    highTemp,
    eccError,
    healthWarning,
    faultCodeWarning,
    inferenceCanary,
    xidBit,
    faultCodes,
    faultCodeDefault: rules.fault_codes_default,
  };
}

/** Index of the lowest set bit (the first reason in §2.6 order); -1 for an empty mask. */
export function firstBit(mask: number): number {
  return mask === 0 ? -1 : 31 - Math.clz32(mask & -mask);
}

/** The first active reason in §2.6 order, or null. */
export function firstReason(table: ReasonTable, mask: number): string | null {
  const bit = firstBit(mask);
  return bit < 0 ? null : (table.names[bit] ?? null);
}

/** Every reason in the mask, in §2.6 order, each name once. */
export function reasonNames(table: ReasonTable, mask: number): string[] {
  const out: string[] = [];
  for (let rest = mask; rest !== 0; rest &= rest - 1) {
    const name = table.names[firstBit(rest)];
    if (name !== undefined && !out.includes(name)) out.push(name);
  }
  return out;
}

/** Re-expresses a mask of `from`'s bits in `to`'s bits (a reload may move or drop bits). */
export function remapMask(mask: number, from: ReasonTable, to: ReasonTable): number {
  if (mask === 0 || from === to) return mask;
  let out = 0;
  for (let rest = mask; rest !== 0; rest &= rest - 1) {
    const id = from.ids[firstBit(rest)];
    const bit = id === undefined ? -1 : to.ids.indexOf(id);
    if (bit >= 0) out |= 1 << bit;
  }
  return out;
}

/**
 * The active reasons that on their own hold a device in `state`: any reason keeps a
 * device `unknown` (no clean sample yet) or `degraded` (every active reason of a degraded
 * device is a warning, which is what degrades); only a critical reason holds it `failed`
 * (a warning fails nothing by itself, only through 180 s of degradation). Healthy: none.
 */
export function holdingMask(table: ReasonTable, state: DeviceStatus, active: number): number {
  if (state === 'healthy') return 0;
  return state === 'failed' ? active & table.critical : active;
}

/**
 * The active reasons that have not changed the status (published as `signals`):
 * everything while healthy or unknown; nothing while degraded (its warnings are why);
 * the warnings of a device failed by a critical reason (`failedByCritical`: one is active
 * now, or one caused the failure). A device failed through 180 s of degradation was failed
 * by its warnings: no signals.
 */
export function signalMask(
  table: ReasonTable,
  state: DeviceStatus,
  active: number,
  failedByCritical = false,
): number {
  if (state === 'healthy' || state === 'unknown') return active;
  if (state === 'failed' && (failedByCritical || (active & table.critical) !== 0))
    return active & ~table.critical;
  return 0;
}
