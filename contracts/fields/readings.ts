/**
 * What hardware can report, per kind of reading, and the schemas of a reading: a number
 * within its kind's bounds, or null when the tool could not read it.
 */
import { z } from 'zod';

/** The bounds of one kind of reading (inclusive), and the unit they are in. */
export interface ReadingBound {
  readonly min: number;
  readonly max: number;
  /** As errors and docs print it after a number (`°C`), or '' for a bare count. */
  readonly unit: string;
}

/**
 * What hardware can report, per kind of reading, inclusive: a value outside is no reading but
 * a glitch (an unread sensor printed as 65535 or -1, a number corrupted on the way), and a
 * snapshot carrying one is refused, naming the field, rather than read as a device at
 * 1e300 °C that remediation would drain. Generous on purpose: a real device in trouble (a GPU
 * at 120 °C) is a reading, and a newer device must not have its snapshots refused by an
 * older function. The agent's parsers read a value outside as null (core/parsers/common.ts).
 */
export const READING_BOUNDS = {
  /**
   * Every temperature (chip, HBM, GPU). Silicon is rated to a junction temperature of 150 to
   * 175 °C at most and accelerators shut down near 100 °C, so 200 is beyond any real reading
   * and still below 255, what an unread 8-bit sensor prints. -55 °C is the floor of the
   * widest (military) sensor ratings; edge stations with Ascend chips are rated to -40 °C.
   */
  temperature: { min: -55, max: 200, unit: '°C' },
  /**
   * Every power draw (chip, 310P card MCU, GPU). A sensor never reads below 0 (-1 is the
   * tools' "cannot read"); the largest devices draw 1.2 to 1.4 kW (NVIDIA B200, GB300) and
   * those announced a few kW, so 10 kW leaves room for generations to come.
   */
  power: { min: 0, max: 10_000, unit: 'W' },
  /**
   * HBM and DDR used and total, in MB. The largest device memory announced is 1 TB of HBM
   * (NVIDIA Rubin Ultra); 16 TiB is sixteen times that and still refuses 2^32 - 1.
   */
  memory: { min: 0, max: 16 * 1024 * 1024, unit: 'MB' },
  /** AI-core utilisation: a share of the cores' time, 0 to 100 %. */
  utilisation: { min: 0, max: 100, unit: '%' },
  /**
   * PCIe link generation. 0 is a link that has not trained (as sysfs reads it); 7.0 is the
   * newest specification (2025) and 8.0 is announced, so 16 leaves room for generations not
   * yet drafted while refusing 255 and 65535.
   */
  pcieGeneration: { min: 0, max: 16, unit: '' },
  /** PCIe link width in lanes: 0 (not trained) to x32, the widest link PCIe defines. */
  pcieWidth: { min: 0, max: 32, unit: '' },
  /**
   * ECC error counters: counts, so never negative, and at most the largest integer a double
   * holds exactly (beyond it a count cannot be told from the next one: it is no count).
   */
  errorCount: { min: 0, max: Number.MAX_SAFE_INTEGER, unit: '' },
  /**
   * An NVIDIA XID number. The driver's XIDs are small numbers (its catalogue ends in the low
   * hundreds today); 9999 leaves room for ten times as many, and still refuses 65535 and a
   * pid or an address misread as an XID.
   */
  xid: { min: 0, max: 9_999, unit: '' },
} as const satisfies Record<string, ReadingBound>;

/** A kind of reading: a key of READING_BOUNDS. */
export type ReadingKind = keyof typeof READING_BOUNDS;

/** True when `value` is a number within the bounds of `kind` (NaN and ±Infinity never are). */
export function withinReadingBounds(kind: ReadingKind, value: number): boolean {
  const bound: ReadingBound = READING_BOUNDS[kind];
  return value >= bound.min && value <= bound.max;
}

/** `-55 to 200 °C`: a kind's bounds as errors and docs print them. */
export function describeReadingBounds(kind: ReadingKind): string {
  const bound: ReadingBound = READING_BOUNDS[kind];
  return `${bound.min} to ${bound.max}${bound.unit === '' ? '' : ` ${bound.unit}`}`;
}

/** The schema's error for a number outside `kind`'s bounds: the value and the bounds. */
function outOfBounds(kind: ReadingKind): (issue: { input?: unknown }) => string {
  const bounds = describeReadingBounds(kind);
  return (issue) => `${String(issue.input)} is outside what hardware can report (${bounds})`;
}

/** A number within `kind`'s bounds (what a reading or an XID must be). */
export function bounded(kind: ReadingKind): z.ZodNumber {
  const { min, max } = READING_BOUNDS[kind];
  const error = outOfBounds(kind);
  return z.number().min(min, { error }).max(max, { error });
}

/**
 * A reading of `kind`: a number within its bounds, or null when the tool could not read it
 * (also when left out).
 */
export function reading(kind: ReadingKind): z.ZodDefault<z.ZodNullable<z.ZodNumber>> {
  return bounded(kind).nullable().default(null);
}
