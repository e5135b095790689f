/**
 * What every family's normalisation shares (CONTRACT §1, "Normalisation"): the health word
 * lower-cased, counters summed, and a device the tool lists but cannot read (`readable:
 * false`) read as present with its own readings unknown.
 */
import type { DeviceObservation } from '../contracts/index.js';

/** The fault codes of a device that has none (shared, frozen: the result is read-only). */
export const NO_CODES: string[] = Object.freeze([]) as unknown as string[];
/** The XID events of a device that has none (shared, frozen). */
export const NO_XIDS: DeviceObservation['xids'] = Object.freeze([]) as unknown as DeviceObservation['xids'];

/** Lower-cases a health word, without allocating for the common spellings. */
export function lowerHealth(health: string): string {
  switch (health) {
    case 'OK':
      return 'ok';
    case 'Warning':
      return 'warning';
    case 'Alarm':
      return 'alarm';
    case 'Critical':
      return 'critical';
    case 'UNKNOWN':
      return 'unknown';
    default:
      return health.toLowerCase();
  }
}

/** The total of two counters; unknown when either part is (a null read as 0 would fake a reset or an increase). */
export function sum(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : a + b;
}

/** Reads every metric, the health word and the link of an unreadable device as unknown. */
export function unreadable(device: DeviceObservation): DeviceObservation {
  device.health = 'unknown';
  device.temperature_c = null;
  device.power_w = null;
  device.memory_used_mb = null;
  device.memory_total_mb = null;
  device.ecc_errors = null;
  device.ecc_uncorrectable = null;
  device.pcie_link_status = null;
  return device;
}
