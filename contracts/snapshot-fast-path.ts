/**
 * The hot path's reader of snapshots: what `snapshotSchema.parse` returns for a valid
 * snapshot (alone, in an ingest batch, or in the controllers' observations request), by
 * hand-written checks, or `undefined` whenever a value is not plainly valid;
 * the caller then asks the schema, which decides and words the error. It never accepts what
 * the schema refuses and never returns other than what the schema would, key order
 * included: `snapshot-fast-path.test.ts` holds it to that, value by value, over generated
 * valid snapshots and mutations of them.
 *
 * **Why a second reader of one contract.** The ingest function validates every snapshot
 * before it forwards it, and at 3,000 snapshots a second zod's generic machinery (a run
 * over the checks of each of some 200 fields of an 8-device snapshot, issue lists, payload
 * objects) was about 8% of the function's busy CPU on one core; these checks do the same
 * work in a fraction of it. Its bounds and patterns are the schema's own (SNAPSHOT_LIMITS,
 * READING_BOUNDS, NODE_NAME_PATTERN, FAULT_CODE_PATTERN, withinSnapshotTimes, zod's datetime
 * pattern), so a change there reaches both; a new field or rule in the schema needs its line
 * here (the differential test fails until it has it: it reads every key path off the
 * schema's shapes).
 *
 * Stricter is allowed, never looser: string bounds are checked in UTF-16 units, where zod
 * counts code points, so a string over its bound only by astral characters (emoji) is left to
 * the schema. Inputs are values JSON.parse gives (no `undefined` values, no class instances).
 */
import { z } from 'zod';
import {
  FAULT_CODE_PATTERN,
  NODE_NAME_PATTERN,
  READING_BOUNDS,
  SNAPSHOT_LIMITS,
  SNAPSHOT_SCHEMA,
  isPrintableText,
  withinSnapshotTimes,
  type ReadingBound,
  type Snapshot,
} from './snapshot.js';
import type { ObservationsRequest } from './observations.js';

/** What z.iso.datetime({ offset: true }) matches (zod's own pattern). */
const DATETIME = z.core.regexes.datetime({ offset: true });

/**
 * Thrown inside at the first doubt and caught at the door: not plainly valid. One instance,
 * made once, so giving up costs no stack trace.
 */
const NOT_PLAIN = new Error('not plainly valid');

type Fields = Record<string, unknown>;
type Out = Record<string, unknown>;

// The bounds of each kind of reading, read once (one comparison pair per metric on the hot path).
const TEMPERATURE = READING_BOUNDS.temperature;
const POWER = READING_BOUNDS.power;
const MEMORY = READING_BOUNDS.memory;
const UTILISATION = READING_BOUNDS.utilisation;
const PCIE_GENERATION = READING_BOUNDS.pcieGeneration;
const PCIE_WIDTH = READING_BOUNDS.pcieWidth;
const ERROR_COUNT = READING_BOUNDS.errorCount;
const XID = READING_BOUNDS.xid;

/** The schema's output for `value`, or undefined when it is not plainly a valid snapshot. */
export function fastParseSnapshot(value: unknown): Snapshot | undefined {
  return plainly(() => snapshot(value) as unknown as Snapshot);
}

/**
 * The snapshots of a batch body `{ "snapshots": [ … ] }` of 1 to `maxBatch`, as the batch
 * schema gives them, or undefined when the body is not plainly a valid batch.
 */
export function fastParseSnapshotBatch(value: unknown, maxBatch: number): Snapshot[] | undefined {
  return plainly(() => oneOrMore(object(value).snapshots, maxBatch, snapshot) as unknown as Snapshot[]);
}

/**
 * An observations request `{ "observations": [ { "snapshot": … } ] }` of 1 to `maxBatch`
 * (what the controllers' endpoint takes), as observationsRequestSchema gives it, or
 * undefined when the body is not plainly a valid request.
 */
export function fastParseObservationsRequest(
  value: unknown,
  maxBatch: number,
): ObservationsRequest | undefined {
  const observation = (item: unknown): Out => ({ snapshot: snapshot(object(item).snapshot) });
  return plainly(
    () =>
      ({
        observations: oneOrMore(object(value).observations, maxBatch, observation),
      }) as unknown as ObservationsRequest,
  );
}

/** What `read` returns, or undefined when it gave up (NOT_PLAIN). */
function plainly<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (error) {
    if (error === NOT_PLAIN) return undefined;
    throw error;
  }
}

/** `items`, of at least one. */
function oneOrMore(value: unknown, max: number, read: (item: unknown) => Out): Out[] {
  const out = items(value, max, read);
  if (out.length === 0) throw NOT_PLAIN;
  return out;
}

function snapshot(value: unknown): Out {
  const v = object(value);
  if (v.schema !== SNAPSHOT_SCHEMA) throw NOT_PLAIN;
  const node = string(v.node, 1, SNAPSHOT_LIMITS.node);
  if (!NODE_NAME_PATTERN.test(node)) throw NOT_PLAIN;
  const collectedAt = datetime(v.collected_at);
  if (!withinSnapshotTimes(collectedAt)) throw NOT_PLAIN;
  const out: Out = {
    schema: SNAPSHOT_SCHEMA,
    node,
    boot_id: stringOr(v.boot_id, SNAPSHOT_LIMITS.id, ''),
    seq: count(v.seq),
    collected_at: collectedAt,
    collector: string(v.collector, 1, SNAPSHOT_LIMITS.label),
    cached: booleanOr(v.cached, false),
  };
  if (v.stale_readings !== undefined) out.stale_readings = boolean(v.stale_readings);
  out.payload = payload(v.payload);
  return out;
}

function payload(value: unknown): Out {
  const v = object(value);
  const family = v.family;
  const out: Out = { family };
  if (v.driver_version !== undefined) out.driver_version = string(v.driver_version, 0, SNAPSHOT_LIMITS.label);
  if (family === '910B') out.npus = items(v.npus, SNAPSHOT_LIMITS.devices, npu910);
  else if (family === '310P') out.cards = items(v.cards, SNAPSHOT_LIMITS.devices, card310);
  else if (family === 'nvidia') out.gpus = items(v.gpus, SNAPSHOT_LIMITS.devices, gpu);
  else throw NOT_PLAIN;
  if (v.canary !== undefined) out.canary = canary(v.canary);
  return out;
}

function npu910(value: unknown): Out {
  const v = object(value);
  const out: Out = { npu: count(v.npu), chip: v.chip === undefined ? 0 : count(v.chip) };
  if (v.phy_id !== undefined) out.phy_id = v.phy_id === null ? null : count(v.phy_id);
  out.name = stringOr(v.name, SNAPSHOT_LIMITS.id, '');
  out.health = stringOr(v.health, SNAPSHOT_LIMITS.health, 'UNKNOWN');
  out.temp_c = reading(v.temp_c, TEMPERATURE);
  out.power_w = reading(v.power_w, POWER);
  out.aicore_pct = reading(v.aicore_pct, UTILISATION);
  const hbm = objectOrEmpty(v.hbm);
  const ecc = objectOrEmpty(hbm.ecc);
  out.hbm = {
    used_mb: reading(hbm.used_mb, MEMORY),
    total_mb: reading(hbm.total_mb, MEMORY),
    temp_c: reading(hbm.temp_c, TEMPERATURE),
    ecc: {
      single_bit: reading(ecc.single_bit, ERROR_COUNT),
      double_bit: reading(ecc.double_bit, ERROR_COUNT),
    },
  };
  const pcie = objectOrEmpty(v.pcie);
  const link = pcie.link;
  if (link !== undefined && link !== null && link !== 'up' && link !== 'down') throw NOT_PLAIN;
  out.pcie = { bus_id: busId(pcie.bus_id), link: link ?? null };
  out.error_codes = errorCodes(v.error_codes);
  out.present = booleanOr(v.present, true);
  if (v.readable !== undefined) out.readable = boolean(v.readable);
  return out;
}

function card310(value: unknown): Out {
  const v = object(value);
  const link = v.pcie_link;
  if (link !== undefined && link !== null && link !== 0 && link !== 1) throw NOT_PLAIN;
  return {
    card: count(v.card),
    name: stringOr(v.name, SNAPSHOT_LIMITS.id, ''),
    bus_id: busId(v.bus_id),
    pcie_link: link ?? null,
    mcu_power_w: reading(v.mcu_power_w, POWER),
    chips: items(v.chips, SNAPSHOT_LIMITS.chips, chip310),
  };
}

function chip310(value: unknown): Out {
  const v = object(value);
  const ddr = objectOrEmpty(v.ddr);
  const out: Out = {
    chip: count(v.chip),
    device_id: count(v.device_id),
    health: stringOr(v.health, SNAPSHOT_LIMITS.health, 'UNKNOWN'),
    temperature: reading(v.temperature, TEMPERATURE),
    power_w: reading(v.power_w, POWER),
    ddr: {
      used_mb: reading(ddr.used_mb, MEMORY),
      total_mb: reading(ddr.total_mb, MEMORY),
      ecc_sbe: reading(ddr.ecc_sbe, ERROR_COUNT),
      ecc_dbe: reading(ddr.ecc_dbe, ERROR_COUNT),
    },
    error_codes: errorCodes(v.error_codes),
    present: booleanOr(v.present, true),
  };
  if (v.readable !== undefined) out.readable = boolean(v.readable);
  return out;
}

function gpu(value: unknown): Out {
  const v = object(value);
  const out: Out = {
    index: count(v.index),
    uuid: v.uuid === undefined || v.uuid === null ? null : string(v.uuid, 0, SNAPSHOT_LIMITS.id),
    bus_id: busId(v.bus_id),
    name: stringOr(v.name, SNAPSHOT_LIMITS.id, ''),
    temperature_gpu: reading(v.temperature_gpu, TEMPERATURE),
    power_draw_w: reading(v.power_draw_w, POWER),
    ecc_corrected_volatile: reading(v.ecc_corrected_volatile, ERROR_COUNT),
    ecc_uncorrected_volatile: reading(v.ecc_uncorrected_volatile, ERROR_COUNT),
    pcie_link_gen: reading(v.pcie_link_gen, PCIE_GENERATION),
    pcie_link_width: reading(v.pcie_link_width, PCIE_WIDTH),
    xid_events: v.xid_events === undefined ? [] : items(v.xid_events, SNAPSHOT_LIMITS.xidEvents, xidEvent),
    present: booleanOr(v.present, true),
  };
  if (v.readable !== undefined) out.readable = boolean(v.readable);
  return out;
}

function xidEvent(value: unknown): Out {
  const v = object(value);
  const xid = count(v.xid);
  if (xid < XID.min || xid > XID.max) throw NOT_PLAIN;
  return { xid, at: v.at === undefined || v.at === null ? null : datetime(v.at) };
}

function canary(value: unknown): Out {
  const v = object(value);
  const ok = boolean(v.ok);
  const failures = count(v.consecutive_failures);
  if (failures > SNAPSHOT_LIMITS.canaryFailures || ok !== (failures === 0)) throw NOT_PLAIN;
  return {
    ok,
    consecutive_failures: failures,
    at: v.at === undefined || v.at === null ? null : datetime(v.at),
  };
}

function items(value: unknown, max: number, read: (item: unknown) => Out): Out[] {
  const items = array(value, max);
  const out: Out[] = [];
  for (const item of items) out.push(read(item));
  return out;
}

function errorCodes(value: unknown): string[] {
  if (value === undefined) return [];
  const items = array(value, SNAPSHOT_LIMITS.errorCodes);
  const out: string[] = [];
  for (const item of items) {
    if (typeof item !== 'string' || !FAULT_CODE_PATTERN.test(item)) throw NOT_PLAIN;
    out.push(item);
  }
  return out;
}

function object(value: unknown): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw NOT_PLAIN;
  return value as Fields;
}

/** A sub-object the schema prefaults to `{}` when left out. */
function objectOrEmpty(value: unknown): Fields {
  return value === undefined ? {} : object(value);
}

function array(value: unknown, max: number): unknown[] {
  if (!Array.isArray(value) || value.length > max) throw NOT_PLAIN;
  return value;
}

function string(value: unknown, min: number, max: number): string {
  if (typeof value !== 'string' || value.length < min || value.length > max || !isPrintableText(value))
    throw NOT_PLAIN;
  return value;
}

function stringOr(value: unknown, max: number, absent: string): string {
  return value === undefined ? absent : string(value, 0, max);
}

function busId(value: unknown): string | null {
  return value === undefined || value === null ? null : string(value, 1, SNAPSHOT_LIMITS.busId);
}

function datetime(value: unknown): string {
  if (typeof value !== 'string' || !DATETIME.test(value)) throw NOT_PLAIN;
  return value;
}

function boolean(value: unknown): boolean {
  if (typeof value !== 'boolean') throw NOT_PLAIN;
  return value;
}

function booleanOr(value: unknown, absent: boolean): boolean {
  return value === undefined ? absent : boolean(value);
}

/** A non-negative safe integer. */
function count(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw NOT_PLAIN;
  return value;
}

/** A number within `bound` (which NaN and ±Infinity never are), or null (also when left out). */
function reading(value: unknown, bound: ReadingBound): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !(value >= bound.min && value <= bound.max)) throw NOT_PLAIN;
  return value;
}
