/**
 * Completes a payload with the installed devices the tool did not report: each is sent with
 * `present: false` and every reading unknown, so a device that vanished from the tool's
 * output is seen going off the bus instead of silently leaving the snapshot. Pure.
 *
 * How an installed device is matched to the payload's is the payload's family's own
 * (families/<id>/inventory.ts: by PCI bus id, or by device node where the payload carries no
 * bus ids), from the bus ids installed under the family's vendor and the device nodes.
 *
 * A device added carries the identity it had in `previous` (the last completed payload, when
 * given and of the same family: index, uuid, name, NPU and chip numbers, a 310P card's chips),
 * so the controller follows the same device rather than a new one; otherwise it gets numbers
 * that collide with no device reported.
 */
import type { Payload } from '../../contracts/index.js';
import { normaliseBusId } from '../../core/parsers/index.js';
import { FAMILIES } from '../../families/index.js';
import type { Inventory } from './scan.js';

/** A bus id in the form inventories use; unreadable text is kept as it is. */
function busKey(bus: string | null): string | null {
  return bus === null ? null : (normaliseBusId(bus) ?? bus);
}

/** Adds the installed devices the payload lacks, with present:false (pure). */
export function applyInventory(payload: Payload, inventory: Inventory, previous?: Payload | null): Payload {
  const family = FAMILIES.get(payload.family);
  if (family === undefined) return payload;
  const before = previous?.family === payload.family ? previous : null;
  const busIds = (inventory as Partial<Record<string, string[]>>)[family.inventory.vendor] ?? [];
  const installed = { busIds, deviceNodes: inventory.deviceNodes };
  return family.inventory.complete(payload, installed, before, busKey) as Payload;
}
