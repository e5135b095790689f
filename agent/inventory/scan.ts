/**
 * What accelerators the node has installed, read from the kernel rather than from the tools:
 * the tools list what they can reach, and a device that stopped answering is exactly the one
 * a tool leaves out.
 *
 * PCI functions (`<sysPciDevices>/<bus id>/{vendor,device,class}`), counted when:
 * - NVIDIA (vendor 0x10de) with class 0x0300xx (VGA-compatible controller: GPUs with a display
 *   engine) or 0x0302xx (3D controller: the data-centre GPUs). Their HDMI audio (0x0403),
 *   USB-C (0x0c03) and NVSwitch (0x0680, a bridge) functions are not accelerators.
 * - Huawei (vendor 0x19e5) with class 0x1200xx (processing accelerator) and a device id in
 *   0xd000-0xdfff, the Ascend range (e.g. 0xd100 310, 0xd500 310P, 0xd801 910, 0xd802
 *   910B). Huawei also makes the Kunpeng host's own functions (NICs, SAS, and the
 *   HiSilicon ZIP engine 0xa250, itself a processing accelerator): the device range keeps
 *   them out.
 * SR-IOV virtual functions (those with a `physfn` link) are left out: they are slices of a
 * physical device counted already, handed to VMs, and come and go with their configuration.
 *
 * Device nodes: `/dev/davinci<N>` and `/dev/nvidia<N>`; the control nodes (`davinci_manager`,
 * `nvidiactl`, `nvidia-uvm`, `nvidia-modeset`, `nvidia-caps`) are not devices.
 */
import { readFile, readdir, access } from 'node:fs/promises';
import { join } from 'node:path';
import { normaliseBusId } from '../../core/parsers/index.js';

/** Where the kernel shows devices (configurable for tests). */
export interface InventoryPaths {
  sysPciDevices: string /*'/sys/bus/pci/devices'*/;
  dev: string /*'/dev'*/;
}

/** The installed accelerators. */
export interface Inventory {
  /** normalised PCI bus ids of installed accelerators, by vendor */ huawei: string[];
  nvidia: string[];
  /** device node names present, e.g. 'davinci0', 'nvidia3' */ deviceNodes: string[];
}

/** The real paths. */
export const DEFAULT_INVENTORY_PATHS: Readonly<InventoryPaths> = Object.freeze({
  sysPciDevices: '/sys/bus/pci/devices',
  dev: '/dev',
});

const NVIDIA_VENDOR = 0x10de;
const HUAWEI_VENDOR = 0x19e5;
/** Base class and subclass (the class code without its programming interface byte). */
const NVIDIA_CLASSES = new Set([0x0300, 0x0302]);
const HUAWEI_ACCELERATOR_CLASS = 0x1200;

/** Which vendor's accelerator a PCI function is, from its sysfs ids; null when none. */
export function acceleratorVendor(
  vendor: number,
  device: number,
  pciClass: number,
): 'nvidia' | 'huawei' | null {
  const classCode = pciClass >> 8;
  if (vendor === NVIDIA_VENDOR && NVIDIA_CLASSES.has(classCode)) return 'nvidia';
  if (vendor === HUAWEI_VENDOR && classCode === HUAWEI_ACCELERATOR_CLASS && (device & 0xf000) === 0xd000)
    return 'huawei';
  return null;
}

/** The accelerator device nodes: `davinci<N>`, `nvidia<N>`. */
export const DEVICE_NODE = /^(davinci|nvidia)(\d+)$/;

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
  const inventory: Inventory = { huawei: [], nvidia: [], deviceNodes: [] };
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
  inventory.huawei.sort();
  inventory.nvidia.sort();
  inventory.deviceNodes = (await entries(paths.dev)).filter((n) => DEVICE_NODE.test(n)).sort(byNodeNumber);
  return inventory;
}
