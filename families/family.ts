/**
 * What one accelerator family is, in one place (families/<id>/index.ts): the payload its agents
 * send and how the hot path reads it, how its devices become the engine's observations (display
 * ids, state keys, resource names), how the agent finds them installed and applies kernel events
 * to them, and how the simulator makes them. Pure: a family is data and functions of their
 * arguments, so contracts/ (the payload union), core/ (normalisation, the simulator) and the
 * components all read the same descriptor through the registry (registry.ts, index.ts).
 *
 * The tools are not families: npu-smi prints both Ascend families and `hdc health -j` prints
 * any family's payload, so tool parsers (core/parsers) and collectors (agent/collectors) build
 * payloads of the families they read, and a family names the collectors `--collector auto`
 * picks for it (`inventory.collectors`).
 */
import type { z } from 'zod';
import type { DeviceKind, DeviceObservation } from '../contracts/index.js';
import type { FamilyPayloadSchema, ReadingKind, plain } from '../contracts/fields/index.js';
import type { SimDeviceSecond, SimFaultSupport, SimNodeKind, SimRandom } from './sim.js';

/** A kernel event that names a device (agent/events): removed, or (a GPU's) an XID. */
export interface DeviceEvent {
  kind: 'xid' | 'removed';
  /** The device's PCI bus id as the kernel printed it; null when the event names a device node. */
  busId: string | null;
  xid?: number | undefined;
  /** When it happened (ISO). */
  at: string;
  /** The kernel line, or the device node's name (`davinci3`) for a removed node. */
  line: string;
}

/** Whether two bus ids, as tools and the kernel print them, are the same PCI function. */
export type SameBus = (a: string | null | undefined, b: string | null) => boolean;
/** A bus id in the one spelling inventories use (unreadable text kept as it is). */
export type BusKey = (bus: string | null) => string | null;

/** What the kernel says is installed, for one family: its vendor's PCI functions and device nodes. */
export interface InstalledDevices {
  /** Normalised bus ids of the vendor's accelerator functions, sorted. */
  busIds: readonly string[];
  /** Every accelerator device node present (`davinci0`, `nvidia3`), of any family. */
  deviceNodes: readonly string[];
}

/** How the agent finds a family's devices installed (agent/inventory) and reads them. */
export interface FamilyInventory<Payload, Vendor extends string = string> {
  /**
   * The vendor the node's installed functions are listed under (`huawei`); families of one
   * vendor share the list, and the first family of the registry that matches a function names it.
   */
  readonly vendor: Vendor;
  /** True when a PCI function (its sysfs vendor, device and class ids) is one of the vendor's accelerators. */
  isAccelerator(vendor: number, device: number, pciClass: number): boolean;
  /** Its device nodes' prefix: `/dev/davinci<N>`, `/dev/nvidia<N>`. */
  readonly deviceNode: string;
  /**
   * The collectors `--collector auto` picks on a node where the family is installed, in order:
   * the first whose command is on PATH, else the last.
   */
  readonly collectors: readonly string[];
  /**
   * `payload` with the installed devices it lacks added as `present: false`, with the identity
   * they had in `previous` (the last completed payload of the family) when known. Pure.
   */
  complete(payload: Payload, installed: InstalledDevices, previous: Payload | null, busKey: BusKey): Payload;
}

/** How the simulator makes a family's nodes (core/sim). */
export interface FamilySim<Payload, Kinds extends string = string> {
  /** The kinds of simulated node, the family's plain one first (`910B`, then the A3 `A3`). */
  readonly kinds: Readonly<Record<Kinds, SimNodeKind>>;
  /** The payload a node's tool prints for one second of its devices (all of them, omitted ones too). */
  payload(driverVersion: string, devices: readonly SimDeviceSecond[], rng: SimRandom): Payload;
  readonly faults: SimFaultSupport;
}

/**
 * One accelerator family. `Schema` is its payload (familyPayloadSchema: `family`, its device
 * lists, the canary); methods take the payload as validated.
 */
export interface FamilyDescriptor<
  Id extends string = string,
  Schema extends FamilyPayloadSchema<Id> = FamilyPayloadSchema<Id>,
  Readings extends Record<string, ReadingKind> = Record<string, ReadingKind>,
  DeviceReadings extends Record<string, readonly (keyof Readings & string)[]> = Record<
    string,
    readonly (keyof Readings & string)[]
  >,
  SimKinds extends string = string,
  Vendor extends string = string,
> {
  /** The payload's `family`, and the `family` of its devices' observations and metrics. */
  readonly id: Id;
  /** What its devices are, as published (`npu`, `gpu`). */
  readonly kind: DeviceKind;
  /** The payload as the wire carries it (the snapshot's `payload` when `family` is `id`). */
  readonly payloadSchema: Schema;
  /**
   * The hot path's reader of the payload's device lists (contracts/snapshot-fast-path.ts): sets
   * each on `out` as the schema would, or throws plain.NOT_PLAIN at the first doubt.
   */
  readDevices(payload: plain.Fields, out: plain.Out): void;
  /** Every bounded reading of a device, by its key path within the device: the agent's metric label `field`. */
  readonly readingFields: Readings;
  /** The bounded readings of each kind of device record (`npu910`), by key path. */
  readonly deviceReadings: DeviceReadings;
  /**
   * Applies `bound` to every device record of a payload as JSON gave it (not yet validated),
   * with that record's readings: `hdc health -j` output read before the schema sees it.
   */
  boundJsonReadings(
    payload: plain.Fields,
    bound: (device: unknown, fields: readonly string[]) => number,
  ): void;
  /** How many devices (observations) the payload holds, counted without building them. */
  devicesIn(payload: z.output<Schema>): number;
  /**
   * Appends one observation per device to `out` (CONTRACT §1 table), `family` set to `id`:
   * display id, state key, resource name and unified readings. Reuses the payload's arrays.
   */
  normalise(payload: z.output<Schema>, out: DeviceObservation[]): void;
  /** A payload of no device (a liveness sample's). */
  emptyPayload(): z.output<Schema>;
  /** The device plugin's extended resources that make a node one of this family's (`huawei.com/Ascend910`). */
  readonly resourceNames: readonly string[];
  readonly inventory: FamilyInventory<z.output<Schema>, Vendor>;
  /**
   * Applies one kernel event to the payload in place (a removed device is `present: false`;
   * an XID joins its GPU's events); false when it names none of the payload's devices.
   */
  applyEvent(payload: z.output<Schema>, event: DeviceEvent, sameBus: SameBus): boolean;
  /**
   * Data a payload reports once and never again (a GPU's XIDs), which the agent carries into a
   * later snapshot when it drops one. Absent: nothing of the family's payload is one-shot.
   */
  readonly oneShotEvents?: OneShotEvents<z.input<Schema>>;
  readonly sim: FamilySim<z.output<Schema>, SimKinds>;
}

/** How a family's one-shot events are counted and carried (agent/push/carry.ts). */
export interface OneShotEvents<PayloadInput> {
  count(payload: PayloadInput): number;
  /** `into` with the events of `dropped` added (matched to the same devices); `into` is not modified. */
  carry(dropped: PayloadInput, into: PayloadInput): { payload: PayloadInput; unplaced: number };
}

/** Any family, whatever its types (what the registry holds). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the registry keeps each family's own types
export type AnyFamily = FamilyDescriptor<string, any, any, any, string, string>;

/** Checks a family against the descriptor and keeps its literal types (id, reading fields, sim kinds, vendor). */
export function defineFamily<
  const Id extends string,
  Schema extends FamilyPayloadSchema<Id>,
  const Readings extends Record<string, ReadingKind>,
  const DeviceReadings extends Record<string, readonly (keyof Readings & string)[]>,
  const SimKinds extends string,
  const Vendor extends string,
>(
  family: FamilyDescriptor<Id, Schema, Readings, DeviceReadings, SimKinds, Vendor>,
): FamilyDescriptor<Id, Schema, Readings, DeviceReadings, SimKinds, Vendor> {
  return family;
}
