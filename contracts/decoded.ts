/**
 * How the contracts read a JSON value someone else wrote (a Node annotation, a ConfigMap key):
 * the value, or one line naming where it came from and the first field that is wrong.
 */
import type { z } from 'zod';

/** Decoded, or one line saying what is wrong. */
export type Decoded<T> = { value: T; error?: undefined } | { value?: undefined; error: string };

/** Parses `text` as JSON and validates it; `where` names the annotation or key in the error. */
export function decodeJson<T>(schema: z.ZodType<T>, text: string, where: string): Decoded<T> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { error: `${where}: not JSON` };
  }
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { value: parsed.data };
  const issue = parsed.error.issues[0];
  const path = issue?.path.length ? `/${issue.path.map(String).join('/')}` : '';
  return { error: `${where}${path}: ${issue?.message ?? 'invalid'}` };
}
