/**
 * The agent's node-local HTTP API: `/v1/health`, and the node's published fault status as
 * the ingest function answers each push, at `/v1/fault` and as Server-Sent Events at
 * `/v1/fault/stream` (heartbeats, Last-Event-ID resume), for pods on the node without API
 * credentials (paths and body: contracts/agent-local.ts). The one door into agent/local/.
 *
 * ```ts
 * const feed = createFaultFeed();
 * // the sender's onAnswer: feed.update({ entry: a.result.entry, leader: a.leader, term: a.term }, isoNow)
 * const app = createLocalApp({ feed, lastSample, pushStatus: () => sender.status(), node, clock, log, registry }, { heartbeatMs: 15_000 });
 * const server = createHttpServer({ port: 8081, log, registry, handler: app });
 * // end open streams as the server starts stopping, or they hold it for the grace period:
 * const serving: Runnable = { name: server.name, start: (signal) => {
 *   signal.addEventListener('abort', () => app.close(), { once: true });
 *   return server.start(signal);
 * } };
 * ```
 */
export { createFaultFeed, type FaultFeed, type FaultState } from './fault-feed.js';
export {
  LOCAL_APP_DEFAULTS,
  createLocalApp,
  type LocalApp,
  type LocalAppDeps,
  type LocalAppOptions,
  type LocalPushStatus,
  type LocalToolStatus,
} from './local-app.js';
