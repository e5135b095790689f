/**
 * What the remediation tests on the plane share: writing the hot-reloaded settings ConfigMap
 * and waiting until replicas have them in force, waiting for a Node, and reading its record.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { REMEDIATION_ANNOTATION, decodeNodeRecord, type NodeRecord } from '../../contracts/index.js';
import type { RemediationConfigInput } from '../../controller/remediation/index.js';
import { watchUntil } from './cluster.js';
import type { ControllerProcess } from './controller-process.js';
import type { StatusFollower } from './fleet.js';

/** The settings ConfigMap the controllers watch (k8s/controller, CONTRACT §5.7). */
const SETTINGS = 'npu-fault-remediation';

/**
 * Writes the remediation settings (passes every 200 ms unless `input` says otherwise) and
 * waits until each of `replicas` logs them in force.
 */
export async function applyRemediationSettings(
  core: k8s.CoreV1Api,
  namespace: string,
  replicas: readonly ControllerProcess[],
  input: RemediationConfigInput,
): Promise<void> {
  const text = stringify({ intervalMs: 200, ...input });
  const body = { metadata: { name: SETTINGS }, data: { 'remediation.yaml': text } };
  let version: string | undefined;
  try {
    version = (await core.createNamespacedConfigMap({ namespace, body })).metadata?.resourceVersion;
  } catch {
    version = (await core.replaceNamespacedConfigMap({ name: SETTINGS, namespace, body })).metadata
      ?.resourceVersion;
  }
  await Promise.all(
    replicas.map((r) =>
      r.waitForLog(
        (l) => l.msg === 'remediation settings in force' && String(l.source).endsWith(`@${version}`),
        15_000,
        `settings @${version}`,
      ),
    ),
  );
}

/** Waits until the Node `name` satisfies `predicate` (a watch, with a deadline). */
export function nodeWhere(
  admin: k8s.KubeConfig,
  name: string,
  predicate: (n: k8s.V1Node) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<k8s.V1Node> {
  return watchUntil<k8s.V1Node>(admin, '/api/v1/nodes', predicate, {
    fieldSelector: `metadata.name=${name}`,
    timeoutMs,
    what: `${name}: ${what}`,
  });
}

/** The controller's remediation record on a Node, or undefined. */
export function recordOf(n: k8s.V1Node): NodeRecord | undefined {
  const text = n.metadata?.annotations?.[REMEDIATION_ANNOTATION];
  return text === undefined ? undefined : decodeNodeRecord(text).value;
}

/**
 * Creates kwok Nodes labelled `npu-fault-test=<testLabel>` (what `onlyTheseNodesArgs` selects)
 * and waits until each is Ready.
 */
export async function createReadyKwokNodes(
  admin: k8s.KubeConfig,
  core: k8s.CoreV1Api,
  names: readonly string[],
  testLabel: string,
): Promise<void> {
  for (const name of names)
    await core.createNode({
      body: {
        metadata: {
          name,
          annotations: { 'kwok.x-k8s.io/node': 'fake' },
          labels: { 'kubernetes.io/hostname': name, type: 'kwok', 'npu-fault-test': testLabel },
        },
      },
    });
  for (const name of names)
    await nodeWhere(
      admin,
      name,
      (n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
      'Ready',
      60_000,
    );
}

/**
 * Controller arguments that make only the Nodes labelled `npu-fault-test=<testLabel>`
 * accelerator nodes to a replica: other test files create theirs at the same time, and the
 * breaker counts accelerator nodes. No mirrors either.
 */
export function onlyTheseNodesArgs(testLabel: string): string[] {
  return [
    '--nodes-resource-names=example.invalid/none',
    `--nodes-label-selector=npu-fault-test=${testLabel}`,
    '--no-mirrors-enabled',
  ];
}

/** Waits until the status document lists none of `nodes` as unobserved. */
export async function everyNodeObserved(follower: StatusFollower, nodes: readonly string[]): Promise<void> {
  await follower.waitFor((d) => nodes.every((n) => !d.unobserved.includes(n)), 30_000, 'every node observed');
}

/** Keeps a replica's log lines in the temp dir (`npu-fault-<name>.log`), for a failure's post-mortem. */
export function saveReplicaLog(replica: ControllerProcess, name: string): void {
  writeFileSync(
    join(tmpdir(), `npu-fault-${name}.log`),
    replica.logs.map((l) => JSON.stringify(l)).join('\n'),
  );
}
