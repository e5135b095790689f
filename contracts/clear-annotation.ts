/**
 * The clear request (CONTRACT §3.6, §5.6): the Node annotation `npu-fault.io/clear` that an
 * operator sets (`npu-fault clear`) and every controller replica applies, the leader removing
 * it once a document showing the clear is published.
 *
 * Its value is `all` (or empty) for the whole node, or a comma-separated list of device ids
 * (`npu3`) or keys (`0000:C4:00.0`), each at most 256 characters; blanks around items are
 * ignored.
 */
import { z } from 'zod';

/** The annotation an operator sets on a Node to clear its latched failures. */
export const CLEAR_ANNOTATION = 'npu-fault.io/clear';

/** The longest device id or key a clear may name. */
export const MAX_CLEAR_DEVICE = 256;

/** What a clear request asks for: the whole node, or these devices (ids or keys). */
export type ClearRequest = { all: true } | { all: false; devices: string[] };

/** The annotation's value read into a request (refused: one issue saying what is expected). */
export const clearRequestSchema = z.string().transform((text, ctx): ClearRequest => {
  const trimmed = text.trim();
  if (trimmed === '' || trimmed === 'all') return { all: true };
  const devices = trimmed.split(',').map((d) => d.trim());
  if (devices.some((d) => d === '' || d.length > MAX_CLEAR_DEVICE)) {
    ctx.addIssue({ code: 'custom', message: 'expected "all" or a comma-separated list of device ids' });
    return z.NEVER;
  }
  return { all: false, devices };
});

/** Reads `npu-fault.io/clear`; `error` is one line naming the annotation. */
export function parseClear(text: string): ClearRequest | { error: string } {
  const parsed = clearRequestSchema.safeParse(text);
  if (parsed.success) return parsed.data;
  return { error: `${CLEAR_ANNOTATION}: ${parsed.error.issues[0]?.message ?? 'invalid'}` };
}

/** The annotation value of a request: `all`, or the devices joined by commas. */
export function formatClear(request: ClearRequest): string {
  return request.all ? 'all' : request.devices.join(',');
}
