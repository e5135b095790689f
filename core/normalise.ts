/**
 * Snapshot → DeviceObservation[] (CONTRACT §1, "Normalisation"): every device of every
 * family becomes one entry with a stable identity (`key`), its `family` and unified fields.
 * How a family's devices map is the family's own (families/<id>/normalise.ts); this reads the
 * payload's family in a registry (the product's FAMILIES unless told) and does what is the
 * same for every family.
 *
 * This runs once per device per snapshot on the controller's hot path, so the families build
 * one plain object per device and reuse the snapshot's arrays (error codes, XID events) rather
 * than copying them. The result must be treated as read-only.
 *
 * The payload's `canary` (the node's inference canary) is copied onto every device as
 * `inference_canary_failures`: the canary says serving on the node is broken, not which chip.
 *
 * Keys are unique within one snapshot: should two devices share a key (two chips behind one
 * bus id), the later ones get `#<id>` appended, so they can never share state.
 */
import type { AnyFamilyPayload, DeviceObservation } from '../contracts/index.js';
import { FAMILIES, type AnyFamily, type FamilyRegistry } from '../families/index.js';

export { lowerHealth } from '../families/index.js';

/** The families a snapshot's payload is read with. */
type Families = Pick<FamilyRegistry, 'get'>;

/** The family of `payload` in `families`; a validated payload always has one. */
function familyOf(payload: AnyFamilyPayload, families: Families): AnyFamily {
  const family = families.get(payload.family);
  if (family === undefined)
    throw new TypeError(`no family ${JSON.stringify(payload.family)} in the registry`);
  return family;
}

/** Normalises every device of one validated snapshot. */
export function normalise(
  snapshot: { payload: AnyFamilyPayload },
  families: Families = FAMILIES,
): DeviceObservation[] {
  const payload = snapshot.payload;
  const out: DeviceObservation[] = [];
  familyOf(payload, families).normalise(payload, out);
  if (payload.canary !== undefined) {
    const failures = payload.canary.consecutive_failures;
    for (const device of out) device.inference_canary_failures = failures;
  }
  return uniqueKeys(out);
}

/**
 * How many devices (chips) a payload lists: what `normalise` would return, counted without
 * building them. A 310P card counts its chips. The limit `max_devices_per_node` reads this.
 */
export function devicesIn(payload: AnyFamilyPayload, families: Families = FAMILIES): number {
  return familyOf(payload, families).devicesIn(payload);
}

function uniqueKeys(devices: DeviceObservation[]): DeviceObservation[] {
  if (devices.length < 2) return devices;
  const seen = new Set<string>();
  for (const device of devices) {
    if (seen.has(device.key)) {
      // The suffixed key may be taken too (a dishonest agent can list `A#gpu1` itself).
      let key = `${device.key}#${device.id}`;
      for (let n = 2; seen.has(key); n++) key = `${device.key}#${device.id}#${n}`;
      device.key = key;
    }
    seen.add(device.key);
  }
  return devices;
}
