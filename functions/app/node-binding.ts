/**
 * Authorisation bound to the node. An agent presents a pod-bound token of its ServiceAccount
 * (TokenRequest with `boundObjectRef` kind Pod, as the kubelet projects it); TokenReview then
 * reports the node its pod runs on in `user.extra["authentication.kubernetes.io/node-name"]`.
 * A snapshot is accepted only for that node, so a compromised agent (or a stolen token)
 * cannot report another node failed and trigger its drain. A token that names no node (not
 * pod-bound, or of a pod not yet scheduled) is refused outright.
 */
import { AppError } from '../../platform/index.js';
import type { AuthenticatedUser } from '../../platform/k8s/index.js';
import type { Snapshot } from '../../contracts/index.js';

/** The `user.extra` key TokenReview fills with the bound pod's node. */
export const NODE_NAME_EXTRA = 'authentication.kubernetes.io/node-name';

/** The agent's ServiceAccount name (k8s/agent/). */
export const AGENT_SERVICE_ACCOUNT = 'npu-fault-agent';

/** The username of the agent's ServiceAccount in `namespace`. */
export function agentUser(namespace: string, serviceAccount = AGENT_SERVICE_ACCOUNT): string {
  return `system:serviceaccount:${namespace}:${serviceAccount}`;
}

/** Why a request was refused with 403 (the answer's `code` and the metric's `reason`). */
export type ForbiddenReason = 'forbidden_user' | 'not_node_bound' | 'node_mismatch';

/** An authenticated request that may not post (this) snapshot: answer 403. */
export class ForbiddenError extends AppError {
  declare readonly code: ForbiddenReason;
  constructor(code: ForbiddenReason, message: string) {
    super(code, message, { status: 403 });
  }
}

/**
 * The node `user`'s token is bound to, once the user is one of `allowed`; ForbiddenError for
 * another user or a token that names no single node.
 */
export function boundNode(user: AuthenticatedUser, allowed: ReadonlySet<string>): string {
  if (!allowed.has(user.username)) {
    throw new ForbiddenError('forbidden_user', `user "${user.username}" may not post snapshots`);
  }
  const nodes = user.extra[NODE_NAME_EXTRA] ?? [];
  const node = nodes[0];
  if (nodes.length !== 1 || !node) {
    throw new ForbiddenError(
      'not_node_bound',
      'the token is not bound to a pod on a node (mint it with boundObjectRef kind Pod)',
    );
  }
  return node;
}

/**
 * Throws ForbiddenError naming the first snapshot (as a JSON pointer under `at`) whose `node`
 * is not `node`.
 */
export function requireNode(snapshots: readonly Snapshot[], node: string, at: string, batch: boolean): void {
  const index = snapshots.findIndex((snapshot) => snapshot.node !== node);
  if (index === -1) return;
  const pointer = batch ? `${at}/snapshots/${index}/node` : `${at}/node`;
  const other = snapshots[index]?.node ?? '';
  throw new ForbiddenError(
    'node_mismatch',
    `${pointer}: the token is bound to node "${node}", not "${other}"`,
  );
}
