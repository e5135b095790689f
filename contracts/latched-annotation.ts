/**
 * The annotation `npu-fault.io/latched` on a Node: the node's latched failures, compact JSON,
 * written by the leading controller whenever they change so that they survive a restart of every
 * replica (the engine seeds from them), and readable by anyone with patch rights on Nodes, so
 * every read validates and says what is wrong in one line naming the annotation.
 */
import { z } from 'zod';

/** The annotation's name. */
export const LATCHED_ANNOTATION = 'npu-fault.io/latched';

/** The most devices a latched record may list (a node has at most a few dozen). */
const MAX_LATCHED_DEVICES = 256;

/** One latched device. */
export const latchedDeviceSchema = z.strictObject({
  /** State identity (bus id, uuid). */
  key: z.string().min(1).max(256),
  /** Display id (`npu3`). */
  id: z.string().min(1).max(64),
  resource_id: z.string().min(1).max(256),
  kind: z.enum(['npu', 'gpu']),
  model: z.string().max(256),
  /** The latched reasons, by name (`ecc-uncorrectable`, `xid-79`). */
  reasons: z.array(z.string().min(1).max(64)).min(1).max(32),
  /** When the device failed (ISO time, the state machine's `since`). */
  since: z.iso.datetime({ offset: true }),
  /** Counter baselines when recorded (a lower reading after a new boot is a reset). */
  ecc_errors: z.number().int().nonnegative().nullable(),
  ecc_uncorrectable: z.number().int().nonnegative().nullable(),
});

/** One latched device, as the engine keeps and seeds it. */
export type LatchedDevice = z.infer<typeof latchedDeviceSchema>;

const latchedSchema = z.array(latchedDeviceSchema).max(MAX_LATCHED_DEVICES);

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
