/**
 * ResourceSlices (resource.k8s.io/v1) as written by DRA drivers: only what device taints need
 * (driver, pool and its generation, node, each device's name and string attributes), read
 * leniently (unknown fields pass) but checked: a slice that is not what the API promises is
 * refused whole with one line naming the field, never half-read.
 */
import { z } from 'zod';

/** One device of a slice: its name and its string attributes by fully qualified name. */
export interface SliceDevice {
  readonly name: string;
  /** `<domain>/<name>` → value; an unqualified name is the driver's own (`<driver>/<name>`). */
  readonly attributes: ReadonlyMap<string, string>;
}

/** One ResourceSlice, as device taints use it. */
export interface ResourceSliceView {
  readonly name: string;
  readonly driver: string;
  readonly pool: string;
  readonly generation: number;
  /** The node whose devices these are; undefined for network-attached pools. */
  readonly nodeName: string | undefined;
  readonly devices: readonly SliceDevice[];
}

const attributeSchema = z.looseObject({ string: z.string().optional() });

const sliceSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string().min(1) }),
  spec: z.looseObject({
    driver: z.string().min(1),
    pool: z.looseObject({ name: z.string().min(1), generation: z.number().int().nonnegative() }),
    nodeName: z.string().min(1).optional(),
    devices: z
      .array(
        z.looseObject({
          name: z.string().min(1),
          attributes: z.record(z.string(), attributeSchema).optional(),
        }),
      )
      .optional(),
  }),
});

/** A slice read, or why it was refused (one line naming the field). */
export type ParsedSlice = { slice: ResourceSliceView } | { error: string };

/** Reads one ResourceSlice object from the API. */
export function parseResourceSlice(object: unknown): ParsedSlice {
  const parsed = sliceSchema.safeParse(object);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = (object as { metadata?: { name?: unknown } } | null)?.metadata?.name;
    const where = issue?.path.join('.') || '(root)';
    return {
      error: `ResourceSlice ${typeof name === 'string' ? name : '?'}: ${where}: ${issue?.message ?? 'invalid'}`,
    };
  }
  const { metadata, spec } = parsed.data;
  return {
    slice: {
      name: metadata.name,
      driver: spec.driver,
      pool: spec.pool.name,
      generation: spec.pool.generation,
      nodeName: spec.nodeName,
      devices: (spec.devices ?? []).map((device) => ({
        name: device.name,
        attributes: new Map(
          Object.entries(device.attributes ?? {}).flatMap(([key, value]) =>
            value.string === undefined ? [] : [[qualify(key, spec.driver), value.string] as const],
          ),
        ),
      })),
    },
  };
}

/** The API's rule: an attribute name without a domain is in the driver's. */
function qualify(name: string, driver: string): string {
  return name.includes('/') ? name : `${driver}/${name}`;
}
