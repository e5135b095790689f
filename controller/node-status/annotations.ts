/**
 * The controller's annotations on Nodes (pure): reading them is a boundary (anyone with
 * patch rights on Nodes may write them), so every read validates and says what is wrong in
 * one line, naming the annotation.
 *
 * - `npu-fault.io/latched`: the node's latched failures (core/engine LatchedDevice[], compact
 *   JSON), written by the leader whenever they change, so they survive a restart of every
 *   controller replica (the engine seeds from them).
 *
 * The clear request an operator sets (`npu-fault.io/clear`) is read by the CLI too: its format
 * is in contracts/ (clear-annotation.ts).
 */
import { z } from 'zod';
import type { LatchedDevice } from '../../core/engine/index.js';
import { LATCHED_ANNOTATION } from '../watch/index.js';

export { LATCHED_ANNOTATION };

/** The most devices a latched record may list (a node has at most a few dozen). */
const MAX_DEVICES = 256;

const latchedDeviceSchema = z.strictObject({
  key: z.string().min(1).max(256),
  id: z.string().min(1).max(64),
  resource_id: z.string().min(1).max(256),
  kind: z.enum(['npu', 'gpu']),
  model: z.string().max(256),
  reasons: z.array(z.string().min(1).max(64)).min(1).max(32),
  since: z.iso.datetime({ offset: true }),
  ecc_errors: z.number().int().nonnegative().nullable(),
  ecc_uncorrectable: z.number().int().nonnegative().nullable(),
});

const latchedSchema = z.array(latchedDeviceSchema).max(MAX_DEVICES);

/** The annotation value for `records`; null when there are none (the annotation is removed). */
export function encodeLatched(records: readonly LatchedDevice[]): string | null {
  return records.length === 0 ? null : JSON.stringify(records);
}

/** Reads the annotation; `error` is one line naming the annotation and the field. */
export function decodeLatched(
  text: string | undefined,
): { records: LatchedDevice[]; error?: undefined } | { records?: undefined; error: string } {
  if (text === undefined || text === '') return { records: [] };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { error: `${LATCHED_ANNOTATION}: not JSON` };
  }
  const parsed = latchedSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path.length ? `/${issue.path.join('/')}` : '';
    return { error: `${LATCHED_ANNOTATION}${path}: ${issue?.message ?? 'invalid'}` };
  }
  return { records: parsed.data };
}
