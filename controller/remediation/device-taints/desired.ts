/**
 * Which DeviceTaintRules should exist (pure): each device matching the trigger, on a node
 * whose devices a DRA driver publishes in ResourceSlices, is matched to exactly one slice
 * device by PCI address or UUID and gets one rule selecting that driver, pool and device. A
 * device that matches none, or more than one, is reported and never guessed.
 */
import { createHash } from 'node:crypto';
import type { PublishedDevice, PublishedNode } from '../../../contracts/index.js';
import type { RemediationConfig } from '../config.js';
import { matchingDevices } from '../decide.js';
import type { ResourceSliceView, SliceDevice } from './resource-slices.js';

/** The label every rule this controller owns carries (its list selector). */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'npu-fault';
/** Which install owns a rule (its controller's namespace): two installs never touch each other's. */
export const OWNER_LABEL = 'npu-fault.io/controller-namespace';
/** Annotations saying whose device a rule taints (a node name may be too long for a label). */
export const NODE_ANNOTATION = 'npu-fault.io/node';
export const DEVICE_ANNOTATION = 'npu-fault.io/device';

/** The Kubernetes standard attribute of a PCI device (k8s.io/dynamic-resource-allocation/deviceattribute). */
export const PCI_BUS_ID_ATTRIBUTE = 'resource.kubernetes.io/pciBusID';

/** What the decision knows of one node. */
export interface DeviceTaintNode {
  readonly name: string;
  readonly optedOut: boolean;
  readonly maintenance: boolean;
  /** Its published entry (null: healthy; undefined: not observed since this replica started). */
  readonly entry: PublishedNode | null | undefined;
}

/** One DeviceTaintRule wanted. */
export interface DesiredRule {
  readonly name: string;
  readonly node: string;
  /** The published device's key (annotation, logs). */
  readonly deviceKey: string;
  readonly driver: string;
  readonly pool: string;
  readonly device: string;
  readonly taint: {
    readonly key: string;
    readonly value: string;
    readonly effect: 'NoSchedule' | 'NoExecute';
  };
}

/** Why a device to taint has no rule. */
export type UnmatchedWhy = 'no-identifier' | 'no-device' | 'ambiguous';

/** A device to taint that has no rule (reported, never guessed). */
export interface UnmatchedDevice {
  readonly node: string;
  readonly deviceKey: string;
  readonly why: UnmatchedWhy;
}

/** What should exist. */
export interface DesiredDeviceTaints {
  readonly rules: readonly DesiredRule[];
  /** Nodes whose existing rules stay whatever `rules` says (unobserved, in maintenance). */
  readonly keep: ReadonlySet<string>;
  readonly unmatched: readonly UnmatchedDevice[];
}

/** The nodes that have devices to taint (whose ResourceSlices the actor must read). */
export function nodesToTaint(nodes: readonly DeviceTaintNode[], config: RemediationConfig): string[] {
  return nodes
    .filter((node) => !node.optedOut && !node.maintenance && devicesToTaint(node, config).length > 0)
    .map((node) => node.name);
}

/**
 * The rules wanted for `nodes`, given the ResourceSlices of the nodes with devices to taint,
 * for the install whose controller runs in namespace `owner`.
 */
export function desiredDeviceTaints(
  nodes: readonly DeviceTaintNode[],
  slices: readonly ResourceSliceView[],
  config: RemediationConfig,
  owner: string,
): DesiredDeviceTaints {
  const rules: DesiredRule[] = [];
  const keep = new Set<string>();
  const unmatched: UnmatchedDevice[] = [];
  const current = currentSlices(slices);
  // A rule selects driver, pool and device name: the DRA API makes a device name unique in its
  // pool, but a driver that reuses a pool on several nodes would have the rule select them all.
  const named = new Map<string, number>();
  for (const slice of current)
    for (const device of slice.devices) {
      const id = `${slice.driver}/${slice.pool}/${device.name}`;
      named.set(id, (named.get(id) ?? 0) + 1);
    }
  for (const node of nodes) {
    // No evidence either way (unobserved), or planned work: leave what is there.
    if (node.entry === undefined || node.maintenance) {
      keep.add(node.name);
      continue;
    }
    if (node.optedOut) continue;
    const devices = devicesToTaint(node, config);
    if (devices.length === 0) continue;
    const onNode = current.filter((slice) => slice.nodeName === node.name);
    // Not a DRA node (or its slices are gone for now): nothing to taint, nothing to report.
    // The reconciler keeps the rules of a node whose slices went missing a short while.
    if (onNode.length === 0) continue;
    for (const device of devices) {
      const matched = matchDevice(device, onNode);
      const found: Match =
        'why' in matched ||
        (named.get(`${matched.slice.driver}/${matched.slice.pool}/${matched.device.name}`) ?? 0) === 1
          ? matched
          : { why: 'ambiguous' };
      if ('why' in found) {
        unmatched.push({ node: node.name, deviceKey: device.key, why: found.why });
        // Only in an older generation of its pool: the driver is republishing the pool slice by
        // slice, so the device's rule (if any) stays until the new generation names it.
        if (
          found.why === 'no-device' &&
          !('why' in matchDevice(device, olderOnNode(slices, current, node.name)))
        )
          keep.add(node.name);
        continue;
      }
      rules.push({
        name: ruleName(owner, node.name, found.slice.driver, found.slice.pool, found.device.name),
        node: node.name,
        deviceKey: device.key,
        driver: found.slice.driver,
        pool: found.slice.pool,
        device: found.device.name,
        taint: {
          key: config.deviceTaints.taintKey,
          value: device.status,
          effect: config.deviceTaints.effect,
        },
      });
    }
  }
  return { rules, keep, unmatched };
}

/** The node's devices matching the trigger's statuses and reasons (each device on its own). */
export function devicesToTaint(node: DeviceTaintNode, config: RemediationConfig): PublishedDevice[] {
  return matchingDevices(node.entry, config.trigger);
}

/** Only the newest generation of each pool counts (older slices are being replaced). */
function currentSlices(slices: readonly ResourceSliceView[]): ResourceSliceView[] {
  const newest = new Map<string, number>();
  for (const slice of slices) {
    const pool = `${slice.driver}/${slice.pool}`;
    newest.set(pool, Math.max(newest.get(pool) ?? 0, slice.generation));
  }
  return slices.filter((slice) => newest.get(`${slice.driver}/${slice.pool}`) === slice.generation);
}

/** The node's slices of generations older than their pool's newest. */
function olderOnNode(
  slices: readonly ResourceSliceView[],
  current: readonly ResourceSliceView[],
  node: string,
): ResourceSliceView[] {
  const newest = new Set(current);
  return slices.filter((slice) => slice.nodeName === node && !newest.has(slice));
}

type Match = { slice: ResourceSliceView; device: SliceDevice } | { why: UnmatchedWhy };

/** The one slice device that is `device`, by PCI address or UUID. */
function matchDevice(device: PublishedDevice, slices: readonly ResourceSliceView[]): Match {
  const ids = identifiersOf(device);
  if (ids.pci === undefined && ids.uuid === undefined) return { why: 'no-identifier' };
  const found: { slice: ResourceSliceView; device: SliceDevice }[] = [];
  for (const slice of slices)
    for (const candidate of slice.devices) {
      const theirs = sliceIdentifiers(candidate, slice.driver);
      if (
        (ids.pci !== undefined && theirs.pci.has(ids.pci)) ||
        (ids.uuid !== undefined && theirs.uuid === ids.uuid)
      )
        found.push({ slice, device: candidate });
    }
  const [only, ...more] = found;
  if (!only) return { why: 'no-device' };
  return more.length > 0 ? { why: 'ambiguous' } : only;
}

/** A published device's PCI address and UUID, from its key and resource id. */
export function identifiersOf(device: Pick<PublishedDevice, 'key' | 'resource_id'>): {
  pci?: string;
  uuid?: string;
} {
  const ids: { pci?: string; uuid?: string } = {};
  for (const value of [device.key, device.resource_id]) {
    const pci = normalisePciAddress(value);
    if (pci !== undefined) ids.pci ??= pci;
    else if (UUID.test(value)) ids.uuid ??= value.toLowerCase();
  }
  return ids;
}

/**
 * NVIDIA's GPU and MIG UUIDs as nvidia-smi and NVIDIA's DRA driver print them (GPU-<uuid>,
 * MIG-<uuid>, the older MIG-GPU-<uuid>/<gi>/<ci>); only ever compared for equality.
 */
const UUID = /^(?:GPU|MIG|MIG-GPU)-[0-9a-f][0-9a-f/-]*$/i;

/** The identifiers a slice device publishes: the standard PCI attribute, the driver's own. */
function sliceIdentifiers(device: SliceDevice, driver: string): { pci: Set<string>; uuid?: string } {
  const pci = new Set<string>();
  for (const name of [PCI_BUS_ID_ATTRIBUTE, `${driver}/pciBusID`, `${driver}/pcieBusID`]) {
    const value = device.attributes.get(name);
    const normalised = value === undefined ? undefined : normalisePciAddress(value);
    if (normalised !== undefined) pci.add(normalised);
  }
  const uuid = device.attributes.get(`${driver}/uuid`);
  return { pci, ...(uuid !== undefined ? { uuid: uuid.toLowerCase() } : {}) };
}

const PCI = /^(?:([0-9a-f]{1,8}):)?([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$/i;

/**
 * `domain:bus:device.function` in one spelling: nvidia-smi writes an 8-digit domain
 * (00000000:3B:00.0), sysfs and the Kubernetes attribute 4 (0000:3b:00.0). A key naming a
 * chip of a card (`…/1`) is not a PCI function and matches nothing.
 */
export function normalisePciAddress(value: string): string | undefined {
  const parts = PCI.exec(value);
  if (!parts) return undefined;
  const [, domain = '0', bus = '', slot = '', fn = ''] = parts;
  return `${Number.parseInt(domain, 16).toString(16).padStart(4, '0')}:${bus}:${slot}.${fn}`.toLowerCase();
}

/**
 * A DNS-subdomain name, the same for the same device on every replica and pass: readable
 * node and device, then a hash of owner/driver/pool/device/node (sanitising can merge names;
 * the owner, the controller's namespace, keeps two installs' rules for one device apart).
 */
export function ruleName(owner: string, node: string, driver: string, pool: string, device: string): string {
  const hash = createHash('sha256')
    .update(`${owner}\n${node}\n${driver}\n${pool}\n${device}`)
    .digest('hex')
    .slice(0, 10);
  const readable = `npu-fault-${node}-${device}`
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .slice(0, 200)
    .replace(/[.-]+$/, '');
  return `${readable}-${hash}`;
}
