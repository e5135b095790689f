/** A bearer token kept in a file (a projected ServiceAccount token) and rotated in place. */
import { readFile } from 'node:fs/promises';
import type { Clock } from './clock.js';

/**
 * How long a token read from its file is used before the file is read again. The kubelet
 * rotates a projected ServiceAccount token in place once 80% of its lifetime (an hour by
 * default) has passed, and the old one stays valid until it expires, so a minute-old copy is
 * always good; client-go's file token source re-reads once a minute too.
 */
export const TOKEN_FILE_MAX_AGE_MS = 60_000;

/**
 * The token in `path`, trimmed, read again once the copy in hand is `maxAgeMs` old (0: at
 * every call): the kubelet rotates a projected ServiceAccount token in place
 * (`/var/run/secrets/kubernetes.io/serviceaccount/token`), so a token read once would
 * expire. A read (open, stat, read, close on libuv's pool) costs ~100 µs of CPU: the
 * function's forwarder asks at every request to a replica, up to a thousand a second, and
 * keeps the default; the agent asks once a second and reads every time (0), so that a token
 * the function refuses is replaced by the rotated one at the next retry. Calls while a read
 * is under way share it (with a max age above 0); a failed read is not kept, so the next
 * call reads again.
 */
export function tokenFromFile(
  path: string,
  clock: Clock,
  maxAgeMs = TOKEN_FILE_MAX_AGE_MS,
): () => Promise<string> {
  let token: Promise<string> | undefined;
  let readAt = Number.NEGATIVE_INFINITY;
  const read = async (): Promise<string> => {
    const text = (await readFile(path, 'utf8')).trim();
    if (text === '') throw new Error(`token file ${path} is empty`);
    return text;
  };
  return () => {
    const now = clock.monotonic();
    if (token === undefined || now - readAt >= maxAgeMs) {
      const reading = read();
      token = reading;
      readAt = now;
      reading.catch(() => {
        if (token === reading) token = undefined;
      });
    }
    return token;
  };
}
