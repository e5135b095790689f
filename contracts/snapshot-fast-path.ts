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
 * here, or in its family's `readDevices` (families/<id>/read.ts) for a payload's device lists
 * (the differential test fails until it has it: it reads every key path off the schema's
 * shapes).
 *
 * Stricter is allowed, never looser: string bounds are checked in UTF-16 units, where zod
 * counts code points, so a string over its bound only by astral characters (emoji) is left to
 * the schema. Inputs are values JSON.parse gives (no `undefined` values, no class instances).
 */
import { FAMILIES } from '../families/index.js';
import {
  DNS_LABEL_PATTERN,
  DNS_SUBDOMAIN_PATTERN,
  NODE_NAME_PATTERN,
  NODE_PROBLEM_NAME_PATTERN,
  SNAPSHOT_LIMITS,
  plain,
  withinSnapshotTimes,
} from './fields/index.js';
import type { ObservationsRequest } from './observations.js';
import { SNAPSHOT_SCHEMA, type Snapshot } from './snapshot.js';

const { NOT_PLAIN, boolean, booleanOr, count, datetime, items, object, string, stringOr } = plain;
type Out = plain.Out;

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
  const descriptor = FAMILIES.get(family);
  if (descriptor === undefined) throw NOT_PLAIN;
  descriptor.readDevices(v, out);
  if (v.canary !== undefined) out.canary = canary(v.canary);
  if (v.node_problems !== undefined)
    out.node_problems = items(v.node_problems, SNAPSHOT_LIMITS.nodeProblems, nodeProblem);
  if (v.device_holders !== undefined)
    out.device_holders = items(v.device_holders, SNAPSHOT_LIMITS.devices, deviceHolder);
  return out;
}

function deviceHolder(value: unknown): Out {
  const v = object(value);
  const resourceId = string(v.resource_id, 1, SNAPSHOT_LIMITS.id);
  return { resource_id: resourceId, pods: items(v.pods, SNAPSHOT_LIMITS.holdersPerDevice, holderPod) };
}

function holderPod(value: unknown): Out {
  const v = object(value);
  return {
    namespace: kubernetesName(v.namespace, SNAPSHOT_LIMITS.dnsLabel, DNS_LABEL_PATTERN),
    name: kubernetesName(v.name, SNAPSHOT_LIMITS.node, DNS_SUBDOMAIN_PATTERN),
    container: kubernetesName(v.container, SNAPSHOT_LIMITS.dnsLabel, DNS_LABEL_PATTERN),
  };
}

function kubernetesName(value: unknown, max: number, pattern: RegExp): string {
  const name = string(value, 1, max);
  if (!pattern.test(name)) throw NOT_PLAIN;
  return name;
}

function nodeProblem(value: unknown): Out {
  const v = object(value);
  const reason = string(v.reason, 1, SNAPSHOT_LIMITS.label);
  if (!NODE_PROBLEM_NAME_PATTERN.test(reason)) throw NOT_PLAIN;
  return { reason, message: stringOr(v.message, SNAPSHOT_LIMITS.problemMessage, '') };
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
