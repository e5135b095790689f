/**
 * The pods holding each device as the engine keeps them (pure): from a snapshot's
 * `device_holders` (CONTRACT §1.9) to resource id → `namespace/name`, sorted and distinct
 * (a pod's containers and a repeated entry count once).
 */
import type { DeviceHolderReading } from '../../contracts/index.js';
import { compareText } from './text.js';

/** What the snapshot says; null when it leaves the field out (not known). */
export function holdersByDevice(
  holders: readonly DeviceHolderReading[] | undefined,
): ReadonlyMap<string, readonly string[]> | null {
  if (holders === undefined) return null;
  const pods = new Map<string, Set<string>>();
  for (const { resource_id, pods: held } of holders) {
    let set = pods.get(resource_id);
    if (set === undefined) pods.set(resource_id, (set = new Set()));
    for (const pod of held) set.add(`${pod.namespace}/${pod.name}`);
  }
  const out = new Map<string, readonly string[]>();
  for (const [id, set] of pods) out.set(id, [...set].sort(compareText));
  return out;
}

/**
 * Whether `holders` names only devices among `resourceIds` (the node's). A list naming another
 * device was mapped from ids that are not the node's resource ids, so it cannot be complete for
 * the devices the node has (CONTRACT §1.9): the engine then takes the holders as not known.
 */
export function namesOnlyDevicesOf(
  holders: ReadonlyMap<string, readonly string[]>,
  resourceIds: ReadonlySet<string>,
): boolean {
  for (const id of holders.keys()) if (!resourceIds.has(id)) return false;
  return true;
}
