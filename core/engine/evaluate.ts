/**
 * One sample of one device → its active reasons (CONTRACT §3.2, §3.3), as a ReasonTable
 * bit mask (the node's inference canary, copied onto each device, included): the table's
 * checks (reason-table.ts), in order, each updating its own memory on the device (window,
 * counter baselines, events) in place; then the latches. Allocates nothing unless the sample
 * carries XID events.
 *
 * Non-latched event reasons (an ECC increase, an XID) stay active while their sample is
 * inside the smoothing window (5 samples), exactly as `ecc-error` is defined; a latched
 * one stays until a new boot or an operator clear.
 */
import type { DeviceObservation } from '../../contracts/index.js';
import type { ReasonTable } from './reasons.js';
import type { DeviceState } from './state.js';

/** Evaluates one sample; returns the active reasons (latched included). */
export function evaluateSample(device: DeviceState, obs: DeviceObservation, table: ReasonTable): number {
  device.n++;
  const mask = table.check(device, obs);
  device.latched |= mask & table.latched;
  return mask | device.latched;
}
