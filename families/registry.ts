/**
 * A registry of families: the list the product is built from (index.ts: FAMILIES), or the same
 * list with one more (a test's). Everything that serves every family reads it: the snapshot's
 * payload union (contracts/snapshot.ts), the hot path's reader (contracts/snapshot-fast-path.ts),
 * normalisation (core/normalise.ts, the engine), the readings' metric labels, the simulator's
 * node kinds, the agent's inventory and the controller's accelerator resources.
 */
import { z } from 'zod';
import type { ReadingKind } from '../contracts/fields/index.js';
import type { AnyFamily, FamilyDescriptor } from './family.js';
import type { SimNodeKind } from './sim.js';

/**
 * The `family` of a device the engine has state for but no sample of yet (seeded from the
 * published document, which does not say): no family may take this id.
 */
export const UNKNOWN_FAMILY = 'unknown';

type Families = readonly [AnyFamily, ...AnyFamily[]];

/** Each family's payload schema, in the registry's order. */
type PayloadSchemas<D extends Families> = {
  -readonly [K in keyof D]: D[K] extends FamilyDescriptor<string, infer S> ? S : never;
};

/** `A | B` → `A & B`. */
type Intersect<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;

/** The registry's families' ids. */
export type FamilyIdOf<D extends Families> = D[number]['id'];
/** Every reading field of every family, by key path, with its kind. */
export type ReadingFieldsOf<D extends Families> = Intersect<D[number]['readingFields']>;
/** Every device record's bounded readings, of every family. */
export type DeviceReadingsOf<D extends Families> = Intersect<D[number]['deviceReadings']>;
/** The vendors installed accelerators are listed under. */
export type VendorOf<D extends Families> = D[number]['inventory']['vendor'];
/** The kinds of simulated node of every family. */
export type SimKindOf<D extends Families> = SimKindsOf<D[number]>;
type SimKindsOf<F> = F extends AnyFamily ? keyof F['sim']['kinds'] & string : never;

/** A family's kind of simulated node, with its family. */
export interface SimKindEntry {
  family: AnyFamily;
  kind: SimNodeKind;
}

/** What `defineFamilies` builds. */
export interface FamilyRegistry<D extends Families = Families> {
  /** The families, in registry order. */
  readonly families: D;
  readonly ids: readonly FamilyIdOf<D>[];
  /** The family whose id is `id` (a payload's `family`); undefined when none. */
  get(id: unknown): AnyFamily | undefined;
  /** The payload of any of the families, discriminated by `family`. */
  readonly payloadSchema: z.ZodDiscriminatedUnion<PayloadSchemas<D>, 'family'>;
  /** Every bounded reading of every family's devices, by key path, in registry order. */
  readonly readingFields: ReadingFieldsOf<D>;
  /** The bounded readings of every family's device records. */
  readonly deviceReadings: DeviceReadingsOf<D>;
  /** The extended resources that make a node an accelerator node, in registry order. */
  readonly resourceNames: readonly string[];
  /** The vendors installed accelerators are listed under (agent/inventory), in registry order. */
  readonly vendors: readonly VendorOf<D>[];
  /** The vendor a PCI function is an accelerator of (the first family that says so), or null. */
  vendorOf(vendor: number, device: number, pciClass: number): VendorOf<D> | null;
  /** The accelerator device nodes' prefixes (`davinci`, `nvidia`), in registry order. */
  readonly deviceNodes: readonly string[];
  /** The kinds of simulated node, in registry order (each family's plain kind first). */
  readonly simKinds: readonly SimKindOf<D>[];
  /** A kind of simulated node and its family; undefined when no family has it. */
  simKind(kind: string): SimKindEntry | undefined;
}

/**
 * A registry of `families` (at least one). Throws when two share an id, a reading field or a
 * simulated node kind, or when one takes UNKNOWN_FAMILY.
 */
export function defineFamilies<const D extends Families>(families: D): FamilyRegistry<D> {
  const byId = new Map<unknown, AnyFamily>();
  const readingFields: Record<string, ReadingKind> = {};
  const deviceReadings: Record<string, readonly string[]> = {};
  const simKinds = new Map<string, SimKindEntry>();
  for (const family of families) {
    if (family.id === UNKNOWN_FAMILY || byId.has(family.id))
      throw new Error(`families: the id ${JSON.stringify(family.id)} is taken`);
    byId.set(family.id, family);
    for (const [field, kind] of Object.entries(family.readingFields as Record<string, ReadingKind>)) {
      // Two families may name one field (a chip's `power_w`) only for one kind of reading.
      if ((readingFields[field] ?? kind) !== kind)
        throw new Error(`families: reading ${field} is ${readingFields[field]} and ${kind}`);
      readingFields[field] = kind;
    }
    for (const [record, fields] of Object.entries(
      family.deviceReadings as Record<string, readonly string[]>,
    )) {
      if (record in deviceReadings) throw new Error(`families: device record ${record} is listed twice`);
      deviceReadings[record] = fields;
    }
    for (const [name, kind] of Object.entries(family.sim.kinds as Record<string, SimNodeKind>)) {
      if (simKinds.has(name)) throw new Error(`families: simulated node kind ${name} is listed twice`);
      simKinds.set(name, { family, kind });
    }
  }
  const schemas = families.map((family) => family.payloadSchema) as unknown as PayloadSchemas<D>;
  const vendors = [...new Set(families.map((family) => family.inventory.vendor))];
  return {
    families,
    ids: families.map((family) => family.id),
    get: (id) => byId.get(id),
    payloadSchema: z.discriminatedUnion('family', schemas),
    readingFields: readingFields as ReadingFieldsOf<D>,
    deviceReadings: deviceReadings as DeviceReadingsOf<D>,
    resourceNames: [...new Set(families.flatMap((family) => family.resourceNames))],
    vendors,
    deviceNodes: [...new Set(families.map((family) => family.inventory.deviceNode))],
    vendorOf(vendor, device, pciClass) {
      const family = families.find((f) => f.inventory.isAccelerator(vendor, device, pciClass));
      return family?.inventory.vendor ?? null;
    },
    simKinds: [...simKinds.keys()] as SimKindOf<D>[],
    simKind: (kind) => simKinds.get(kind),
  };
}
