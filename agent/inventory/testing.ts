/**
 * Test support for the inventory: a directory laid out like sysfs's PCI devices and /dev.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InventoryPaths } from './scan.js';

/** One PCI function as sysfs shows it. */
export interface FakePciFunction {
  /** The directory name, e.g. `0000:3b:00.0` (sysfs spells it in lower case). */
  busId: string;
  /** `0x10de` */
  vendor: string;
  /** `0x2330` */
  device: string;
  /** `0x030200` */
  pciClass: string;
  /** An SR-IOV virtual function (gets a `physfn` entry). */
  virtualFunction?: boolean;
}

/** Writes `<root>/sys/bus/pci/devices/<bus>/{vendor,device,class}` and `<root>/dev/<node>`. */
export function writeFakeSysfs(
  root: string,
  functions: readonly FakePciFunction[],
  deviceNodes: readonly string[],
): InventoryPaths {
  const paths = { sysPciDevices: join(root, 'sys/bus/pci/devices'), dev: join(root, 'dev') };
  mkdirSync(paths.sysPciDevices, { recursive: true });
  mkdirSync(paths.dev, { recursive: true });
  for (const fn of functions) {
    const dir = join(paths.sysPciDevices, fn.busId);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'vendor'), `${fn.vendor}\n`);
    writeFileSync(join(dir, 'device'), `${fn.device}\n`);
    writeFileSync(join(dir, 'class'), `${fn.pciClass}\n`);
    if (fn.virtualFunction) mkdirSync(join(dir, 'physfn'));
  }
  for (const node of deviceNodes) writeFileSync(join(paths.dev, node), '');
  return paths;
}
