/** What the decision knows of a cached Node (decide.ts's NodeFacts), read from the Node cache. */
import { decodeNodeRecord } from '../../contracts/index.js';
import type { CachedNode } from '../watch/index.js';
import type { RemediationConfig } from './config.js';
import type { NodeFacts } from './decide.js';

/** The facts of `node` under `config` (its opt-out label). */
export function factsOf(node: CachedNode, config: RemediationConfig): NodeFacts {
  const [labelKey, labelValue] = splitLabel(config.optOutLabel);
  const optedOut = node.npuFaultLabels.some((label) => {
    const [key, value] = splitLabel(label);
    return key === labelKey && (labelValue === undefined || value === labelValue);
  });
  const decoded = node.remediation === undefined ? undefined : decodeNodeRecord(node.remediation);
  return {
    name: node.name,
    accelerator: node.accelerator,
    unschedulable: node.unschedulable,
    optedOut,
    maintenance: node.maintenance !== undefined,
    record: decoded?.value,
    ...(decoded?.error !== undefined ? { recordError: decoded.error } : {}),
  };
}

/** `key=value` → [key, value]; `key` → [key, undefined]. */
function splitLabel(label: string): [string, string | undefined] {
  const at = label.indexOf('=');
  return at < 0 ? [label, undefined] : [label.slice(0, at), label.slice(at + 1)];
}
