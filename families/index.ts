/**
 * The accelerator families' one public door, and the registry the product is built from:
 * `FAMILY_LIST` names every family the product knows, one line each, and FAMILIES is its
 * registry (registry.ts). A family is one folder (family.ts says what it holds); adding one
 * is that folder and its line below (docs/architecture.md, "How to add an accelerator family").
 *
 * A pure layer beside contracts/: it imports only the snapshot's building blocks
 * (contracts/fields/) and, for types alone, contracts/, so contracts/snapshot.ts composes the
 * payload union from it and core/ and the components read each family through it.
 */
import { ascend310P } from './ascend-310p/index.js';
import { ascend910B } from './ascend-910b/index.js';
import { nvidia } from './nvidia/index.js';
import { defineFamilies } from './registry.js';

/** The families the product knows, in the order their payloads are tried and listed. */
export const FAMILY_LIST = [ascend910B, ascend310P, nvidia] as const;

/** The product's registry of families. */
export const FAMILIES = defineFamilies(FAMILY_LIST);

export {
  defineFamily,
  type AnyFamily,
  type BusKey,
  type DeviceEvent,
  type FamilyDescriptor,
  type FamilyInventory,
  type FamilySim,
  type InstalledDevices,
  type OneShotEvents,
  type SameBus,
} from './family.js';
export {
  UNKNOWN_FAMILY,
  defineFamilies,
  type DeviceReadingsOf,
  type FamilyIdOf,
  type FamilyRegistry,
  type ReadingFieldsOf,
  type SimKindEntry,
  type SimKindOf,
  type VendorOf,
} from './registry.js';
export { NO_CODES, NO_XIDS, lowerHealth, sum, unreadable } from './observation.js';
export { deviceNodeIndex } from './device-nodes.js';
export {
  round1,
  simBus,
  simInitialEcc,
  type DeviceProfile,
  type SimDevice,
  type SimDeviceSecond,
  type SimEffects,
  type SimFaultSupport,
  type SimNodeKind,
  type SimRandom,
} from './sim.js';
export {
  ascend310P,
  card310Schema,
  chip310Schema,
  payload310Schema,
  type Card310,
  type Chip310,
} from './ascend-310p/index.js';
export { ascend910B, npu910Schema, payload910Schema, type Npu910 } from './ascend-910b/index.js';
export {
  MAX_XID_EVENTS,
  emptyGpu,
  nvidia,
  gpuSchema,
  payloadNvidiaSchema,
  type Gpu,
} from './nvidia/index.js';
