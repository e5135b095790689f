/**
 * Reads the links sysfs shows: network interfaces (`class/net/<if>/operstate|carrier|speed|
 * carrier_down_count|carrier_changes`, `device`) and RDMA ports (`class/infiniband/<dev>/
 * ports/<n>/state|phys_state|counters/link_downed`), into readings the tracker judges.
 *
 * What the kernel writes:
 * - operstate: `up`, `down`, `lowerlayerdown`, `dormant`, `notpresent`, `testing` or `unknown`
 *   (drivers that do not track it); carrier: `1`/`0`, and EINVAL while the interface is
 *   administratively down; speed: Mb/s, `-1` or EINVAL while the link is down;
 * - carrier_down_count (Linux 4.16+) counts carrier losses; carrier_changes (3.15+) counts
 *   both directions; either lets the tracker count flaps shorter than a read interval;
 * - RDMA state `4: ACTIVE` (1 DOWN, 2 INIT, 3 ARMED, 5 ACTIVE_DEFER), phys_state `5: LinkUp`
 *   (1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 6 LinkErrorRecovery,
 *   7 Phy Test); counters/link_downed counts the port's link losses.
 *
 * A physical NIC has a `device` link (to its PCI function); virtual ones (lo, veth, bridges,
 * bonds, VLANs, vxlan, docker0, cni0, flannel.1, cali*) have none. SR-IOV virtual functions
 * (`device/physfn`) are left out of auto-detection: they are handed to pods and VMs and leave
 * the host's namespace when they are.
 */
import { join } from 'node:path';
import { errorCode } from '../../../platform/index.js';
import { parseWholeNumber, type FileReader } from '../file-reader.js';
import type { LinkReading } from './tracker.js';

/** A network interface name as the kernel allows it (IFNAMSIZ: at most 15 characters, no `/`). */
export const INTERFACE_NAME = /^[A-Za-z0-9_.:@-]{1,15}$/;
/** An RDMA device name (`mlx5_0`, `hns_0`, `irdma1`). */
const RDMA_DEVICE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** What decides which NICs auto-detection may watch. */
export interface NicSelection {
  minSpeedMbps: number;
  /** Names or `prefix*` patterns never auto-detected. */
  ignore: readonly string[];
}

/** Whether `name` matches one of `patterns` (a name, or a prefix ending in `*`). */
export function matchesPattern(name: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => (p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : name === p));
}

/** A file's trimmed text, or undefined when it cannot be read (EINVAL: no carrier or speed now). */
async function optional(files: FileReader, path: string): Promise<string | undefined> {
  try {
    return (await files.readText(path)).trim();
  } catch {
    return undefined;
  }
}

/**
 * Every network interface of `<sysfsRoot>/class/net`. Rejects when the listing fails (the
 * caller counts it); an interface that vanished between the listing and its read is left
 * out (the tracker sees it gone), one whose operstate cannot be read is present with its
 * state unknown.
 */
export async function readNics(
  files: FileReader,
  sysfsRoot: string,
  selection: NicSelection,
): Promise<LinkReading[]> {
  const dir = join(sysfsRoot, 'class/net');
  const names = (await files.list(dir)).filter((name) => INTERFACE_NAME.test(name));
  const readings = await Promise.all(names.map((name) => readNic(files, join(dir, name), name, selection)));
  return readings.filter((r): r is LinkReading => r !== null);
}

async function readNic(
  files: FileReader,
  dir: string,
  name: string,
  selection: NicSelection,
): Promise<LinkReading | null> {
  let operstate: string;
  try {
    operstate = (await files.readText(join(dir, 'operstate'))).trim();
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null;
    return {
      id: name,
      kind: 'nic',
      up: undefined,
      seen: `operstate unreadable (${errorCode(error) ?? 'error'})`,
      eligible: false,
    };
  }
  const [carrier, speed, downCount, changes, device, physfn] = await Promise.all([
    optional(files, join(dir, 'carrier')),
    optional(files, join(dir, 'speed')),
    optional(files, join(dir, 'carrier_down_count')),
    optional(files, join(dir, 'carrier_changes')),
    files.realPath(join(dir, 'device')).catch(() => undefined),
    files.exists(join(dir, 'device/physfn')),
  ]);
  const speedMbps = speed === undefined ? undefined : parseWholeNumber(speed);
  const up = operstate === 'up' || (operstate === 'unknown' && carrier === '1');
  const eligible =
    device !== undefined &&
    !physfn &&
    !matchesPattern(name, selection.ignore) &&
    speedMbps !== undefined &&
    speedMbps >= selection.minSpeedMbps;
  const reading: LinkReading = {
    id: name,
    kind: 'nic',
    up,
    seen: `operstate ${operstate.slice(0, 16)}${carrier === undefined ? '' : `, carrier ${carrier.slice(0, 4)}`}`,
    eligible,
    ...(device === undefined ? {} : { device: device.slice(device.lastIndexOf('/') + 1) }),
    ...(speedMbps === undefined ? {} : { speedMbps }),
  };
  const downs = downCount === undefined ? undefined : parseWholeNumber(downCount);
  const transitions = changes === undefined ? undefined : parseWholeNumber(changes);
  if (downs !== undefined) return { ...reading, downs };
  if (transitions !== undefined) return { ...reading, transitions };
  return reading;
}

/** `4: ACTIVE` → [4, 'ACTIVE']; undefined when it is not that shape. */
export function parseRdmaState(text: string | undefined): { code: number; name: string } | undefined {
  const match = /^(\d{1,2}):\s*([A-Za-z_ ]{1,40})$/.exec(text?.trim() ?? '');
  if (!match) return undefined;
  return { code: Number(match[1]), name: (match[2] as string).trim() };
}

/**
 * Every port of every RDMA device in `<sysfsRoot>/class/infiniband`; none when the class is
 * absent (no RDMA driver loaded). Rejects when a listing fails otherwise.
 */
export async function readRdmaPorts(files: FileReader, sysfsRoot: string): Promise<LinkReading[]> {
  const dir = join(sysfsRoot, 'class/infiniband');
  let devices: string[];
  try {
    devices = await files.list(dir);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
  const perDevice = await Promise.all(
    devices.filter((d) => RDMA_DEVICE_NAME.test(d)).map((d) => readRdmaDevice(files, join(dir, d), d)),
  );
  return perDevice.flat();
}

async function readRdmaDevice(files: FileReader, dir: string, device: string): Promise<LinkReading[]> {
  // An SR-IOV virtual function is a pod's or a VM's to take (it leaves the host when it does):
  // left out of auto-detection, as for NICs; watched when configured.
  const eligible = !(await files.exists(join(dir, 'device/physfn')));
  let ports: string[];
  try {
    ports = (await files.list(join(dir, 'ports'), 256)).filter((p) => /^\d{1,3}$/.test(p));
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
  return Promise.all(
    ports.map((port) => readRdmaPort(files, join(dir, 'ports', port), `${device}/${port}`, eligible)),
  );
}

async function readRdmaPort(
  files: FileReader,
  dir: string,
  id: string,
  eligible: boolean,
): Promise<LinkReading> {
  const [stateText, physText, linkDowned] = await Promise.all([
    optional(files, join(dir, 'state')),
    optional(files, join(dir, 'phys_state')),
    optional(files, join(dir, 'counters/link_downed')),
  ]);
  const state = parseRdmaState(stateText);
  const phys = parseRdmaState(physText);
  if (state === undefined) return { id, kind: 'rdma', up: undefined, seen: 'state unreadable', eligible };
  const up = state.code === 4 && (phys === undefined || phys.code === 5);
  const seen = `state ${state.code}: ${state.name}${phys === undefined ? '' : `, phys_state ${phys.code}: ${phys.name}`}`;
  const downs = linkDowned === undefined ? undefined : parseWholeNumber(linkDowned);
  return { id, kind: 'rdma', up, seen, eligible, ...(downs === undefined ? {} : { downs }) };
}
