/**
 * The one door to agent/inventory/: which accelerators the node has installed (PCI functions
 * by vendor and class, device nodes), and completing a payload with the installed devices the
 * tool left out, as `present: false`.
 */
export { applyInventory } from './apply.js';
export {
  DEFAULT_INVENTORY_PATHS,
  DEVICE_NODE,
  acceleratorVendor,
  scanInventory,
  type Inventory,
  type InventoryPaths,
} from './scan.js';
