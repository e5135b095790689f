/** Where the agent's bearer token comes from. */
import { readFile } from 'node:fs/promises';

/**
 * The token in `path`, read anew at every call: the kubelet rotates a projected
 * ServiceAccount token in place (well before it expires, and the agent's lives an hour), so a
 * token read once would expire under a long-running agent. One read per request is a page-cache hit.
 */
export function tokenFromFile(path: string): () => Promise<string> {
  return async () => {
    const token = (await readFile(path, 'utf8')).trim();
    if (token === '') throw new Error(`token file ${path} is empty`);
    return token;
  };
}
