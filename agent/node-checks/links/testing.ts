/**
 * Test support for the links check: a directory laid out like sysfs's class/net and
 * class/infiniband, and hccn_tool's answers as the real tool prints them.
 */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `hccn_tool -i <npu> -link -g` on a port that is up and one that is down: one line. Sources:
 * Ascend/mind-cluster, component/ascend-common/devmanager/hccn/hccn_tool.go (GetNPULinkStatus:
 * "success result example is: link status: DOWN", the third blank-separated word is the
 * state, UP or DOWN) and SH-AIT/BooM script/mindspore-deepseek/.../net_check.sh (checks each
 * NPU's output for `link status: UP`).
 */
export const HCCN_LINK_UP = 'link status: UP\n';
export const HCCN_LINK_DOWN = 'link status: DOWN\n';

/** One network interface as sysfs shows it. */
export interface FakeNic {
  name: string;
  /** `up`, `down`, `unknown`, … */
  operstate: string;
  /** `1`/`0`; left out: the file is missing, as reading it fails while the interface is administratively down. */
  carrier?: '0' | '1';
  /** Mb/s; left out: unreadable (link down). */
  speed?: number;
  carrierDownCount?: number;
  carrierChanges?: number;
  /** A PCI function (`0000:3b:00.0`): gets a `device` link; left out: a virtual interface. */
  busId?: string;
  /** An SR-IOV virtual function (its device gets a `physfn` link). */
  virtualFunction?: boolean;
}

/** Writes (or rewrites) `<root>/class/net/<name>/…`; returns the interface's directory. */
export function writeNic(root: string, nic: FakeNic): string {
  const dir = join(root, 'class/net', nic.name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'operstate'), `${nic.operstate}\n`);
  if (nic.carrier !== undefined) writeFileSync(join(dir, 'carrier'), `${nic.carrier}\n`);
  if (nic.speed !== undefined) writeFileSync(join(dir, 'speed'), `${nic.speed}\n`);
  if (nic.carrierDownCount !== undefined)
    writeFileSync(join(dir, 'carrier_down_count'), `${nic.carrierDownCount}\n`);
  if (nic.carrierChanges !== undefined)
    writeFileSync(join(dir, 'carrier_changes'), `${nic.carrierChanges}\n`);
  if (nic.busId !== undefined) {
    const device = join(root, 'devices/pci0000:00', nic.busId);
    mkdirSync(device, { recursive: true });
    if (nic.virtualFunction) mkdirSync(join(device, 'physfn'), { recursive: true });
    symlinkSync(device, join(dir, 'device'));
  }
  return dir;
}

/** Removes an interface, as when its NIC falls off the bus. */
export function removeNic(root: string, name: string): void {
  rmSync(join(root, 'class/net', name), { recursive: true, force: true });
}

/** One RDMA port as sysfs shows it. */
export interface FakeRdmaPort {
  device: string;
  port: number;
  /** `4: ACTIVE`, `1: DOWN` */
  state: string;
  /** `5: LinkUp`, `3: Disabled`; left out: no file. */
  physState?: string;
  linkDowned?: number;
  /** An SR-IOV virtual function (its device gets a `physfn` link). */
  virtualFunction?: boolean;
}

/** Writes (or rewrites) `<root>/class/infiniband/<device>/ports/<port>/…`. */
export function writeRdmaPort(root: string, port: FakeRdmaPort): void {
  const dir = join(root, 'class/infiniband', port.device, 'ports', String(port.port));
  mkdirSync(join(dir, 'counters'), { recursive: true });
  writeFileSync(join(dir, 'state'), `${port.state}\n`);
  if (port.physState !== undefined) writeFileSync(join(dir, 'phys_state'), `${port.physState}\n`);
  if (port.linkDowned !== undefined) writeFileSync(join(dir, 'counters/link_downed'), `${port.linkDowned}\n`);
  if (port.virtualFunction)
    mkdirSync(join(root, 'class/infiniband', port.device, 'device/physfn'), { recursive: true });
}

/** Removes an RDMA device with its ports. */
export function removeRdmaDevice(root: string, device: string): void {
  rmSync(join(root, 'class/infiniband', device), { recursive: true, force: true });
}
