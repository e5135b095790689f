/**
 * The published status document (CONTRACT §3): ConfigMap `ai-infra/npu-fault-status-v3`
 * with data keys `version` ("3.0") and `fault.json` (the document below).
 *
 * Each entry of `nodes` keeps the seed's v2 one-node shape (`node`, `npus`, `summary`); the
 * cluster-wide count is `cluster_summary` so no v2 consumer mistakes a failure elsewhere
 * for one on its own node. Objects are not strict so that a v3.x producer may add fields
 * without breaking v3.0 consumers (they check the major version first).
 */
import { z } from 'zod';

/** Name of the status ConfigMap. */
export const STATUS_CONFIGMAP_NAME = 'npu-fault-status-v3';
/** Default namespace of the status ConfigMap. */
export const STATUS_NAMESPACE = 'ai-infra';
/** Schema version of the document (the ConfigMap's `version` key). */
export const PUBLISHED_VERSION = '3.0';
/** ConfigMap data key holding the schema version. */
export const VERSION_DATA_KEY = 'version';
/** ConfigMap data key holding the document. */
export const FAULT_DATA_KEY = 'fault.json';

/** A device's published status. */
export const deviceStatusSchema = z.enum(['unknown', 'healthy', 'degraded', 'failed']);

const count = z.number().int().nonnegative();
const isoTime = z.iso.datetime({ offset: true });

/** Device counts by published status. */
export const summarySchema = z.object({
  total: count,
  healthy: count,
  degraded: count,
  failed: count,
  unknown: count,
});

/** One listed device of a node (only devices not healthy or with a signal are listed). */
export const publishedDeviceSchema = z.object({
  id: z.string().min(1),
  key: z.string().min(1),
  resource_id: z.string().min(1),
  kind: z.enum(['npu', 'gpu']),
  model: z.string(),
  status: deviceStatusSchema,
  /** When the published status began. */
  since: isoTime,
  /** The first of `reasons` (or the overlay that makes the device unknown); null when none. */
  reason: z.string().nullable(),
  /** Every active reason, in CONTRACT §2.6 order. */
  reasons: z.array(z.string()),
  /** Active reasons that have not (yet) changed the status. */
  signals: z.array(z.string()),
  temperature_c: z.number().nullable(),
  power_w: z.number().nullable(),
  ecc_errors: z.number().nullable(),
  pcie_link_status: z.enum(['up', 'down']).nullable(),
  /**
   * The pods holding the device (`namespace/name`, sorted), as the node's kubelet told the
   * agent (CONTRACT §1.9); present only on a device not published healthy and only when the
   * agent knows (added in 3.0's second revision). `[]`: known, held by nobody.
   */
  pods: z.array(z.string()).optional(),
});

/** The agent's state as the controller sees it. */
export const agentStateSchema = z.enum(['ok', 'stale', 'collector-error']);

/** One node: the seed's v2 document shape. */
export const publishedNodeSchema = z.object({
  node: z.string().min(1),
  /** collected_at of the node's newest accepted snapshot. */
  observed_at: isoTime,
  agent: agentStateSchema,
  /**
   * The node reasons that hold (CONTRACT §3.7: overlays, the agent's node problems, the Node's
   * conditions), in publication order; present only when one does (added in 3.0's first
   * revision: a consumer reading only `npus` sees them on each device as before).
   */
  reasons: z.array(z.string()).optional(),
  /** Counts over all of the node's devices, listed or not. */
  summary: summarySchema,
  npus: z.array(publishedDeviceSchema),
  /**
   * Present only when the byte budget left out devices that would be listed (CONTRACT §5.3):
   * how many. A device of this node that is not listed may then be in any status.
   */
  omitted_devices: count.optional(),
});

/** The cluster document (`fault.json`). */
export const publishedDocumentSchema = z
  .object({
    version: z.literal(PUBLISHED_VERSION),
    /** Moves at every heartbeat, so consumers can tell a live publisher from a dead one. */
    timestamp: isoTime,
    publisher: z.object({ identity: z.string().min(1), term: count }),
    /** Accelerator nodes known or observed. */
    node_count: count,
    cluster_summary: summarySchema,
    /** Accelerator nodes with no snapshot yet. */
    unobserved: z.array(z.string()),
    nodes: z.record(z.string(), publishedNodeSchema),
    /**
     * Present when more than the configured fraction (20%) of nodes are stale at once: an
     * ingest outage. Stale nodes holding no failed or degraded device are then not listed, so
     * a node that is not listed is `unknown`, not healthy (CONTRACT §5.3).
     */
    ingest_degraded: z.object({ stale_nodes: count }).optional(),
    /**
     * Present when nodes were cut to keep the document under its byte budget: how many. A node
     * that is not listed is then `unknown`, not healthy (CONTRACT §5.3).
     */
    omitted_nodes: count.optional(),
  })
  .superRefine((doc, ctx) => {
    for (const [name, entry] of Object.entries(doc.nodes)) {
      if (entry.node !== name)
        ctx.addIssue({ code: 'custom', path: ['nodes', name, 'node'], message: 'must equal its key' });
    }
  });

/** A device's status: the state machine's states, which are also what is published. */
export type DeviceStatus = z.infer<typeof deviceStatusSchema>;
export type StatusSummary = z.infer<typeof summarySchema>;
export type PublishedDevice = z.infer<typeof publishedDeviceSchema>;
export type PublishedNode = z.infer<typeof publishedNodeSchema>;
export type AgentState = z.infer<typeof agentStateSchema>;
export type PublishedDocument = z.infer<typeof publishedDocumentSchema>;

/**
 * `document` without the pods on its devices (§5.5): who holds a device is for the main status
 * ConfigMap (read by the controllers and operators) and explain, not for the copies in tenant
 * namespaces nor the agent's node-local stream, where any tenant would read other tenants' pod
 * names. The same object when no device carries pods (the common case costs nothing).
 */
export function documentWithoutHolders(document: PublishedDocument): PublishedDocument {
  const held = Object.values(document.nodes).some((node) => node.npus.some((d) => d.pods !== undefined));
  if (!held) return document;
  const nodes: Record<string, PublishedNode> = {};
  for (const [name, node] of Object.entries(document.nodes)) nodes[name] = nodeWithoutHolders(node);
  return { ...document, nodes };
}

/** `node` without the pods on its devices (see documentWithoutHolders). */
export function nodeWithoutHolders(node: PublishedNode): PublishedNode {
  if (!node.npus.some((d) => d.pods !== undefined)) return node;
  return { ...node, npus: node.npus.map(({ pods: _pods, ...device }) => device) };
}
