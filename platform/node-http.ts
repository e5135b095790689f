/**
 * node:http, required rather than imported. An ES import of a builtin builds its whole
 * namespace, reading every export, and node:http's lazy `WebSocket`, `CloseEvent` and
 * `MessageEvent` getters then load Node's bundled undici (its fetch and WebSocket): about
 * 5 MiB more memory in every process that imports node:http, though nothing here uses them.
 * require() leaves them lazy. Types still come from `import type … from 'node:http'`.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The node:http module. */
export const nodeHttp = require('node:http') as typeof import('node:http');
/** The node:https module (it builds on node:http: required for the same reason). */
export const nodeHttps = require('node:https') as typeof import('node:https');
