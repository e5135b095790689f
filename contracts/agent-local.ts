/**
 * The agent's node-local API, version 1: what a node agent serves on its node (port
 * AGENT_LOCAL_PORT, through a node-local Service) to pods there that hold no API credentials,
 * and what the consumer SDK's `sse` transport reads.
 *
 * - `GET /v1/health`: how the agent is doing (for people and probes).
 * - `GET /v1/fault`: the node's fault status, agentFaultSchema: the node's published entry
 *   as the ingest function last answered it (null: healthy, or no answer yet), its event id,
 *   the leader and term that answered, when the entry last changed, and `stale` (no answer
 *   lately: the entry may be old).
 * - `GET /v1/fault/stream`: the same as Server-Sent Events: events named AGENT_FAULT_EVENT with
 *   that body as `data` and its id as `id`; comments are heartbeats; `Last-Event-ID` (or
 *   `?lastEventId=`) resumes.
 *
 * Other paths answer 404, other methods 405, each `{ "error": { "code", "message" } }`.
 */
import { z } from 'zod';
import { publishedNodeSchema } from './published.js';

/** The port the agent serves its node-local API on. */
export const AGENT_LOCAL_PORT = 8081;
/** The agent's own health. */
export const AGENT_HEALTH_PATH = '/v1/health';
/** The node's fault status, as one JSON document. */
export const AGENT_FAULT_PATH = '/v1/fault';
/** The node's fault status, as Server-Sent Events. */
export const AGENT_FAULT_STREAM_PATH = '/v1/fault/stream';
/** The `event:` name of a fault status on the stream. */
export const AGENT_FAULT_EVENT = 'fault';

/** The body of `/v1/fault` and the `data` of each stream event. */
export const agentFaultSchema = z.object({
  node: z.string(),
  /** The node's published entry; null when it is healthy (not listed), or before the first answer. */
  entry: publishedNodeSchema.nullable(),
  /** The event id of the last change; 0 before the first answer. */
  id: z.number().int().nonnegative(),
  /** The leader whose answer this is, and its term; null before the first answer. */
  leader: z.string().nullable(),
  term: z.number().int().nullable(),
  /** When the entry last changed (ISO); null before the first answer. */
  updated_at: z.string().nullable(),
  /** No answer yet, or none lately: the entry may be old. */
  stale: z.boolean(),
});

export type AgentFault = z.infer<typeof agentFaultSchema>;
