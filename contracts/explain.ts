/**
 * The explain API, version 1: what `npu-fault explain` asks of a controller replica and what
 * the replica answers: the detection engine's own state for one node (or one device), which
 * the published document does not carry. Read-only.
 *
 * Request: `GET /v1/explain/<node>` or `GET /v1/explain/<node>/<device>` (each segment
 * URI-encoded; the device by id such as `npu3`, or by key), with a bearer token of the
 * ServiceAccount EXPLAIN_SERVICE_ACCOUNT of the audience EXPLAIN_TOKEN_AUDIENCE, in
 * `Authorization` or, through the apiserver's pod proxy (which does not forward
 * `Authorization` to the pod), in EXPLAIN_TOKEN_HEADER.
 *
 * Response (200): `{ leader, identity, term, leader_identity, explanation }`: who answered and
 * the node's explanation. Plain JSON (no NaN, no Infinity): times are ISO strings or null,
 * durations milliseconds. Errors (4xx/5xx): `{ "error": { "code", "message" } }`, one line
 * (405 another method, 401 a bad token, 403 another user, 404 a node or device not tracked,
 * 503 a replica still seeding or an apiserver that cannot say).
 */
import { z } from 'zod';
import { observationsErrorSchema } from './observations.js';
import { deviceStatusSchema } from './published.js';

/** The API's path; its version is the first segment. */
export const EXPLAIN_PATH = '/v1/explain';
/** The header that carries the caller's token through the apiserver's pod proxy. */
export const EXPLAIN_TOKEN_HEADER = 'x-npu-fault-authorization';
/** The ServiceAccount whose tokens `npu-fault explain` mints and the endpoint takes (k8s/operator). */
export const EXPLAIN_SERVICE_ACCOUNT = 'npu-fault-explain';
/** The audience of those tokens: no other endpoint (nor the apiserver) takes them. */
export const EXPLAIN_TOKEN_AUDIENCE = 'npu-fault-explain';

/** The request path for a node, or one of its devices. */
export function explainPath(node: string, device: string | undefined): string {
  const tail = device === undefined ? '' : `/${encodeURIComponent(device)}`;
  return `${EXPLAIN_PATH}/${encodeURIComponent(node)}${tail}`;
}

/** A timer running: what fires, when, and on which clock. */
export const explainTimerSchema = z.object({
  /** `degraded`, `failed`, `agent-unreachable`, `collector-error`. */
  name: z.string(),
  from: deviceStatusSchema.nullable(),
  to: deviceStatusSchema,
  /** When it fires (ISO). */
  at: z.string(),
  /**
   * Time left: on the sample clock (collected_at, from the newest sample) for the state
   * machine's timers, on the receiver clock (from `now`) for the overlays. 0 when due.
   */
  in_ms: z.number(),
  clock: z.enum(['collected_at', 'receiver']),
  /** What must hold for it to fire. */
  condition: z.string(),
});

/** One active reason and the rule (with the thresholds in force) that raised it. */
export const explainReasonSchema = z.object({
  name: z.string(),
  severity: z.enum(['critical', 'warning']),
  /** Latched: stays until a new boot with reset counters or an operator clear. */
  latched: z.boolean(),
  rule: z.string(),
});

/** The smoothing window of one device (its last `size` samples). */
export const explainWindowSchema = z.object({
  size: z.number().int(),
  /** Samples of the device so far (the window's clock). */
  samples: z.number().int(),
  high_temp: z.object({
    threshold_c: z.number(),
    min_samples: z.number().int(),
    /** Above the threshold, oldest first, one per sample in the window. */
    hot: z.array(z.boolean()),
    count: z.number().int(),
  }),
  /** Event reasons still inside the window: samples since the event (0: the newest). */
  events: z.array(z.object({ name: z.string(), samples_ago: z.number().int() })),
  ecc_baseline: z.number().nullable(),
  ecc_uncorrectable_baseline: z.number().nullable(),
});

/** One device's explanation. */
export const explainDeviceSchema = z.object({
  id: z.string(),
  key: z.string(),
  resource_id: z.string(),
  model: z.string(),
  /** What is published, since when, and with which reason. */
  status: deviceStatusSchema,
  status_since: z.string(),
  reason: z.string().nullable(),
  /** The state machine's own state (differs from `status` while an overlay holds). */
  state: deviceStatusSchema,
  state_since: z.string(),
  /** The rule that decided the state (or the overlay that overrides it). */
  decided_by: z.string(),
  active: z.array(explainReasonSchema),
  /** Latest readings. */
  temperature_c: z.number().nullable(),
  power_w: z.number().nullable(),
  ecc_errors: z.number().nullable(),
  pcie_link_status: z.enum(['up', 'down']).nullable(),
  window: explainWindowSchema,
  timers: z.array(explainTimerSchema),
  /** Clean samples in a row, and how many recovery needs (degraded/failed → healthy). */
  clean_samples: z.number().int(),
  recover_after_samples: z.number().int(),
  latched: z.array(z.string()),
  /** The command that clears the latches; null when nothing is latched. */
  clear: z.string().nullable(),
  /**
   * The pods holding it (`namespace/name`), as the agent last reported (CONTRACT §1.9), whatever
   * its status; null: not known (an older replica's answer, or an agent that cannot tell).
   */
  pods: z.array(z.string()).nullable().default(null),
});

/** One node's explanation. */
export const explainNodeSchema = z.object({
  tracked: z.literal(true),
  node: z.string(),
  /** The `now` it was computed at (ISO). */
  now: z.string(),
  /** Receiver time of the newest accepted snapshot (null: seeded only, never observed). */
  last_seen: z.string().nullable(),
  /** collected_at of the newest applied (fresh) snapshot: the duration clock. */
  last_collected_at: z.string().nullable(),
  /** Admission: the current boot id, the newest accepted seq, fresh samples applied. */
  boot_id: z.string().nullable(),
  seq: z.number().int().nullable(),
  samples: z.number().int(),
  /** Node reasons in force (CONTRACT §3.7), in publication order: the node entry's `reasons`. */
  overlays: z.array(z.string()),
  /**
   * Each of `overlays` with its rule (thresholds and severity in force) and, for a node problem
   * the agent reports, what its check saw (empty otherwise). Left out by replicas older than
   * node problems: none.
   */
  node_reasons: z.array(z.object({ reason: z.string(), rule: z.string(), message: z.string() })).default([]),
  /**
   * Not listed by the last document rendered although not healthy (CONTRACT §5.3): summarised
   * in an ingest outage or cut to fit the byte budget; readers then take it as unknown.
   */
  withheld: z.enum(['ingest-outage', 'size-budget']).nullable(),
  /** Overlay deadlines pending (agent-unreachable, collector-error), on the receiver clock. */
  timers: z.array(explainTimerSchema),
  /** The devices (all of them, or the one asked for), sorted by id. */
  devices: z.array(explainDeviceSchema),
});

/** The 200 answer: who answered, and the explanation. */
export const explainResponseSchema = z.object({
  leader: z.boolean(),
  identity: z.string(),
  /** The leader's term when this replica leads; null otherwise. */
  term: z.number().int().nullable(),
  /** The leader this replica knows of (itself when leading). */
  leader_identity: z.string().nullable(),
  explanation: explainNodeSchema,
});

/** The body of every error answer (the same shape as the observations API's). */
export const explainErrorSchema = observationsErrorSchema;

export type ExplainTimer = z.infer<typeof explainTimerSchema>;
export type ExplainReason = z.infer<typeof explainReasonSchema>;
export type ExplainWindow = z.infer<typeof explainWindowSchema>;
export type ExplainDevice = z.infer<typeof explainDeviceSchema>;
export type ExplainNode = z.infer<typeof explainNodeSchema>;
export type ExplainResponse = z.infer<typeof explainResponseSchema>;
export type ExplainErrorBody = z.infer<typeof explainErrorSchema>;
