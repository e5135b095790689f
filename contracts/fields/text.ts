/**
 * The text a snapshot carries: printable strings of bounded length, node names, fault codes
 * and times.
 */
import { z } from 'zod';

/** Times past this cannot be written back as ISO-8601 (year 10000 in UTC after an offset). */
const LATEST_TIME = Date.UTC(9999, 0, 1);

/**
 * Text a tool prints (names, uuids, bus ids, health words, boot ids): no control characters
 * (C0, DEL, C1) and no lone UTF-16 surrogate. They never appear in real tool output, and they
 * would reach terminals (`npu-fault status`), logs and the published document, where each
 * control character or lone surrogate is written as a 6-byte escape.
 */
export const PRINTABLE_TEXT_PATTERN = /^[^\p{Cc}\p{Cs}]*$/u;
const PRINTABLE_MESSAGE = 'must be printable text (no control characters)';

/** PRINTABLE_TEXT_PATTERN by hand, for the hot path (snapshot-fast-path.ts); the two agree (tested). */
export function isPrintableText(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return false;
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = text.charCodeAt(i + 1);
      if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return false;
      i++;
    }
  }
  return true;
}

/** A string of at most `max` code points (zod's count) of printable text. */
export function text(max: number, min = 0): z.ZodString {
  return z.string().min(min).max(max).regex(PRINTABLE_TEXT_PATTERN, PRINTABLE_MESSAGE);
}

/** A Kubernetes node name (lower-case DNS subdomain). */
export const NODE_NAME_PATTERN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** One fault code: 1 to 16 hex digits. */
export const FAULT_CODE_PATTERN = /^[0-9A-Fa-f]{1,16}$/;

/** True when `text` (an ISO-8601 time) is between 1970 and 9999, as `collected_at` must be. */
export function withinSnapshotTimes(text: string): boolean {
  const t = Date.parse(text);
  return t >= 0 && t < LATEST_TIME;
}
