/**
 * Config field types the node checks share.
 */
import { z } from 'zod';

/** An absolute path, one line, with no `..` segment (a path the check reads, not one it explores). */
export const ABSOLUTE_PATH = /^(?!.*\/\.\.(\/|$))\/[^\0\r\n]*$/;

/** A string field holding an absolute path (ABSOLUTE_PATH), at most 4096 characters. */
export function absolutePath(): z.ZodString {
  return z.string().max(4096).regex(ABSOLUTE_PATH, 'must be an absolute path (one line, no ".." segment)');
}
