/**
 * The thermal eviction preset's clock (config.ts `thermalEviction`): since when each device
 * has been hot, as the passes of this term saw it. The published document says how long a
 * device has had its status, not how long one reason has held, so the remediator keeps this
 * itself. Pure but for the tracker's memory between passes: time is an argument.
 *
 * A device is hot while its agent reports, its status is not `unknown` and `high-temp` is
 * among its active reasons. Anything else ends the run: cool again, a stale agent, an overlay,
 * the device no longer listed. Missing data never counts as heat. A new leader, a restart, or
 * the preset (or remediation) turned off and on starts every hold again: late, never early.
 */
import type { PublishedDevice, PublishedNode } from '../../contracts/index.js';

/** The reason the preset watches: the rules' `high_temp` (threshold_c, min_samples of the window). */
export const THERMAL_REASON = 'high-temp';

/** Per node, per device key: since when (epoch ms) the device has been hot without a break. */
export type Heat = ReadonlyMap<string, ReadonlyMap<string, number>>;

/** A device hot for at least the hold, and for how long (whole seconds). */
export interface HeldHot {
  readonly device: PublishedDevice;
  readonly seconds: number;
}

/** The devices of `entry` that are hot now. */
export function hotDevices(entry: PublishedNode | null | undefined): PublishedDevice[] {
  if (!entry || entry.agent !== 'ok') return [];
  return entry.npus.filter(
    (device) => device.status !== 'unknown' && device.reasons.includes(THERMAL_REASON),
  );
}

/**
 * The heat after a pass at `now`: a device still hot keeps its start, a newly hot one starts
 * now, any other is dropped (its next run starts again).
 */
export function trackHeat(
  previous: Heat,
  nodes: Iterable<string>,
  entry: (node: string) => PublishedNode | null | undefined,
  now: number,
): Heat {
  const next = new Map<string, ReadonlyMap<string, number>>();
  for (const node of nodes) {
    const hot = hotDevices(entry(node));
    if (hot.length === 0) continue;
    const before = previous.get(node);
    next.set(node, new Map(hot.map((device) => [device.key, before?.get(device.key) ?? now])));
  }
  return next;
}

/** The devices of `entry` hot without a break for at least `forSeconds` at `now`. */
export function heldHot(
  entry: PublishedNode | null | undefined,
  since: ReadonlyMap<string, number> | undefined,
  forSeconds: number,
  now: number,
): HeldHot[] {
  if (!since) return [];
  const held: HeldHot[] = [];
  for (const device of hotDevices(entry)) {
    const start = since.get(device.key);
    if (start === undefined || now - start < forSeconds * 1000) continue;
    held.push({ device, seconds: Math.floor((now - start) / 1000) });
  }
  return held;
}

/** Why a held-hot device triggers, for the node's record and Events. */
export function thermalWhy({ device, seconds }: HeldHot): string {
  const temperature =
    device.temperature_c === null || !Number.isFinite(device.temperature_c)
      ? ''
      : ` at ${Math.round(device.temperature_c * 10) / 10} °C`;
  return `${THERMAL_REASON} for ${seconds} s${temperature}`;
}

/** The heat of one term, carried from pass to pass. */
export interface HeatTracker {
  /** Updates the heat from the entries at `now` and returns it. */
  update(
    nodes: Iterable<string>,
    entry: (node: string) => PublishedNode | null | undefined,
    now: number,
  ): Heat;
  /** Forgets every hold (the preset or remediation is off): the next run starts again. */
  forget(): Heat;
  /** Devices hot now. */
  devices(): number;
}

/** Creates the tracker of one term. */
export function createHeatTracker(): HeatTracker {
  let heat: Heat = new Map();
  return {
    update(nodes, entry, now) {
      heat = trackHeat(heat, nodes, entry, now);
      return heat;
    },
    forget() {
      heat = new Map();
      return heat;
    },
    devices: () => [...heat.values()].reduce((sum, devices) => sum + devices.size, 0),
  };
}
