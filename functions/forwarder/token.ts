/** Where the function's own bearer token comes from. */
import { readFile } from 'node:fs/promises';

/**
 * The token in `path`, read anew at every call: the kubelet rotates a projected
 * ServiceAccount token in place (`/var/run/secrets/kubernetes.io/serviceaccount/token`), so
 * a token read once would expire. A read is a page-cache hit; the forwarder asks once per
 * request, not per snapshot.
 */
export function tokenFromFile(path: string): () => Promise<string> {
  return async () => {
    const token = (await readFile(path, 'utf8')).trim();
    if (token === '') throw new Error(`token file ${path} is empty`);
    return token;
  };
}
