/**
 * The one door to agent/inventory/: which accelerators the node has installed (PCI functions
 * by vendor and class, device nodes, as the families match them), and completing a payload with the installed devices the
 * tool left out, as `present: false`.
 */
export { applyInventory } from './apply.js';
export {
  DEFAULT_INVENTORY_PATHS,
  DEVICE_NODE,
  acceleratorVendor,
  emptyInventory,
  scanInventory,
  type Inventory,
  type InventoryPaths,
  type InventoryVendor,
} from './scan.js';
