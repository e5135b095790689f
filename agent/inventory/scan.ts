/**
 * What accelerators the node has installed, read from the kernel rather than from the tools:
 * the tools list what they can reach, and a device that stopped answering is exactly the one
 * a tool leaves out.
 *
 * PCI functions (`<sysPciDevices>/<bus id>/{vendor,device,class}`) are counted under their
 * vendor when a family says they are one of its accelerators (families/<id>: `inventory`):
 * NVIDIA's GPUs by class, Huawei's Ascend devices by class and device range, and not the
 * vendors' other functions (HDMI audio, NVSwitch, the Kunpeng host's NICs and ZIP engine).
 * SR-IOV virtual functions (those with a `physfn` link) are left out: they are slices of a
 * physical device counted already, handed to VMs, and come and go with their configuration.
 *
 * Device nodes: each family's (`/dev/davinci<N>`, `/dev/nvidia<N>`); the control nodes
 * (`davinci_manager`, `nvidiactl`, `nvidia-uvm`, `nvidia-modeset`, `nvidia-caps`) are not devices.
 */
import { readFile, readdir, access } from 'node:fs/promises';
import { join } from 'node:path';
import { normaliseBusId } from '../../core/parsers/index.js';
import { FAMILIES, type VendorOf } from '../../families/index.js';

/** Where the kernel shows devices (configurable for tests). */
export interface InventoryPaths {
  sysPciDevices: string /*'/sys/bus/pci/devices'*/;
  dev: string /*'/dev'*/;
}

/** A vendor installed accelerators are listed under (`huawei`, `nvidia`): a family's. */
export type InventoryVendor = VendorOf<typeof FAMILIES.families>;

/** The installed accelerators. */
export type Inventory = {
  /** normalised PCI bus ids of installed accelerators, by vendor */
  [Vendor in InventoryVendor]: string[];
} & {
  /** device node names present, e.g. 'davinci0', 'nvidia3' */
  deviceNodes: string[];
};

/** An inventory of nothing. */
export function emptyInventory(): Inventory {
  const inventory = { deviceNodes: [] } as unknown as Inventory;
  for (const vendor of FAMILIES.vendors) inventory[vendor] = [];
  return inventory;
}

/** The real paths. */
export const DEFAULT_INVENTORY_PATHS: Readonly<InventoryPaths> = Object.freeze({
  sysPciDevices: '/sys/bus/pci/devices',
  dev: '/dev',
});

/** Which vendor's accelerator a PCI function is, from its sysfs ids; null when none. */
export function acceleratorVendor(vendor: number, device: number, pciClass: number): InventoryVendor | null {
  return FAMILIES.vendorOf(vendor, device, pciClass);
}

/** The accelerator device nodes, each family's: `davinci<N>`, `nvidia<N>`. */
export const DEVICE_NODE = new RegExp(`^(${FAMILIES.deviceNodes.join('|')})(\\d+)$`);

/** Reads a sysfs hex id (`0x10de\n`); NaN when absent or unreadable. */
async function readHex(path: string): Promise<number> {
  try {
    return Number.parseInt((await readFile(path, 'utf8')).trim(), 16);
  } catch {
    return Number.NaN;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** Directory entries; none when the directory is absent (not Linux, no such bus). */
async function entries(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/** Orders `nvidia2` before `nvidia10`. */
function byNodeNumber(a: string, b: string): number {
  const [, ka = '', na = '0'] = DEVICE_NODE.exec(a) ?? [];
  const [, kb = '', nb = '0'] = DEVICE_NODE.exec(b) ?? [];
  return ka === kb ? Number(na) - Number(nb) : ka < kb ? -1 : 1;
}

/** Scans PCI functions and device nodes. Absent directories read as empty. */
export async function scanInventory(paths: InventoryPaths): Promise<Inventory> {
  const inventory = emptyInventory();
  for (const name of await entries(paths.sysPciDevices)) {
    const dir = join(paths.sysPciDevices, name);
    const [vendor, device, pciClass] = await Promise.all(
      ['vendor', 'device', 'class'].map((file) => readHex(join(dir, file))),
    );
    const kind = acceleratorVendor(vendor ?? Number.NaN, device ?? Number.NaN, pciClass ?? Number.NaN);
    const busId = normaliseBusId(name);
    if (kind === null || busId === null || (await exists(join(dir, 'physfn')))) continue;
    inventory[kind].push(busId);
  }
  for (const vendor of FAMILIES.vendors) inventory[vendor].sort();
  inventory.deviceNodes = (await entries(paths.dev)).filter((n) => DEVICE_NODE.test(n)).sort(byNodeNumber);
  return inventory;
}
