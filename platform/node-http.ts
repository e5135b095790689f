/**
 * node:http, required rather than imported. An ES import of a builtin builds its whole
 * namespace, reading every export, and node:http's lazy `WebSocket`, `CloseEvent` and
 * `MessageEvent` getters then load Node's bundled undici (its fetch and WebSocket): about
 * 5 MiB more memory in every process that imports node:http, though nothing here uses them.
 * require() leaves them lazy. Types still come from `import type … from 'node:http'`.
 */
import { createRequire } from 'node:module';

/** The node:http module. */
export const nodeHttp = createRequire(import.meta.url)('node:http') as typeof import('node:http');
