/**
 * The operator commands (`npu-fault clear`, `npu-fault remediation reset|status`) on the real
 * control plane, as a platform engineer holding exactly the shipped operator roles
 * (k8s/operator/rbac.yaml, bound as k8s/operator/bindings.example.yaml shows, to a
 * ServiceAccount standing in for the group), through a kubeconfig file of that identity's
 * token, the way a person runs them:
 *
 * - clear sets the annotation on a real Node and merges later requests into it; a missing
 *   node is one line naming it; `--wait` follows the node (a watch) until the annotation is
 *   removed (here by the test, standing in for the controller) or times out;
 * - reset closes an open breaker ConfigMap and acknowledges its nodes; refuses an invalid
 *   record unless --force; status shows the breaker and the annotated nodes;
 * - a token without the roles gets one line naming the missing permission, in-process and
 *   from the real `bin/npu-fault.js` process;
 * - the roles grant no more than they say (SelfSubjectAccessReview).
 *
 * Nodes are cluster-scoped and other files run at once: this file's Nodes are named after
 * its namespace and deleted in afterAll; assertions look only at them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { main } from '../cli/main.js';
import { memoryIO } from '../cli/testing.js';
import {
  BREAKER_CONFIGMAP,
  BREAKER_KEY,
  MAINTENANCE_ANNOTATION,
  REMEDIATION_ANNOTATION,
  decodeBreaker,
  type BreakerState,
} from '../contracts/index.js';
import { createTestNamespace, watchUntil, type TestNamespace } from './setup/cluster.js';
import { writeKubeConfig } from './setup/controller-process.js';
import { operatorAccess, OPERATOR_SERVICE_ACCOUNT, type ControllerAccess } from './setup/controller-rbac.js';

const BIN = fileURLToPath(new URL('../bin/npu-fault.js', import.meta.url));
const CLEAR = 'npu-fault.io/clear';
const MERGE_PATCH = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

let ns: TestNamespace;
let access: ControllerAccess;
let core: k8s.CoreV1Api;
/** A kubeconfig file acting as the operator, and one of a ServiceAccount bound to nothing. */
let operator: string;
let nobody: string;
let nodes: { a: string; b: string; c: string };

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = memoryIO();
  const code = await main(args, io);
  return { code, out: io.out, err: io.err };
}

async function clearOf(node: string): Promise<string | undefined> {
  return (await core.readNode({ name: node })).metadata?.annotations?.[CLEAR];
}

async function annotate(node: string, annotations: Record<string, string | null>): Promise<k8s.V1Node> {
  return await core.patchNode({ name: node, body: { metadata: { annotations } } }, MERGE_PATCH);
}

async function storeBreaker(text: string): Promise<void> {
  const body = { metadata: { name: BREAKER_CONFIGMAP, namespace: ns.name }, data: { [BREAKER_KEY]: text } };
  await core
    .deleteNamespacedConfigMap({ name: BREAKER_CONFIGMAP, namespace: ns.name })
    .catch(() => undefined);
  await core.createNamespacedConfigMap({ namespace: ns.name, body });
}

async function storedBreaker(): Promise<BreakerState | undefined> {
  const configMap = await core.readNamespacedConfigMap({ name: BREAKER_CONFIGMAP, namespace: ns.name });
  return decodeBreaker(configMap.data?.[BREAKER_KEY]).value;
}

beforeAll(async () => {
  ns = await createTestNamespace('operator-cli');
  core = ns.admin.makeApiClient(k8s.CoreV1Api);
  access = await operatorAccess(ns);
  operator = writeKubeConfig(access.kubeConfig);
  nobody = writeKubeConfig(await ns.serviceAccountKubeConfig('nobody'));
  nodes = { a: `${ns.name}-a`, b: `${ns.name}-b`, c: `${ns.name}-c` };
  for (const name of Object.values(nodes)) {
    await core.createNode({
      body: { metadata: { name }, status: { capacity: { 'huawei.com/Ascend910': '8' } } },
    });
  }
});

afterAll(async () => {
  for (const name of Object.values(nodes ?? {})) await core?.deleteNode({ name }).catch(() => undefined);
  await access?.dispose();
  await ns?.dispose();
});

describe('npu-fault clear', () => {
  it('sets the annotation on a real Node and merges later requests into it', async () => {
    const first = await cli(['clear', `${nodes.a}/npu3`, '--kubeconfig', operator]);
    expect(first).toEqual({
      code: 0,
      out: `clear requested: node ${nodes.a}, device npu3 (${CLEAR}=npu3)\n`,
      err: '',
    });
    expect(await clearOf(nodes.a)).toBe('npu3');

    expect((await cli(['clear', `${nodes.a}/npu5`, `--kubeconfig=${operator}`])).code).toBe(0);
    expect(await clearOf(nodes.a)).toBe('npu3,npu5');

    const again = await cli(['clear', `${nodes.a}/npu5`, '--kubeconfig', operator]);
    expect(again.out).toBe(`clear already requested: node ${nodes.a}, device npu5 (${CLEAR}=npu3,npu5)\n`);

    expect((await cli(['clear', nodes.a, '--kubeconfig', operator])).code).toBe(0);
    expect(await clearOf(nodes.a)).toBe('all');
    // `all` wins over a later device request.
    expect((await cli(['clear', `${nodes.a}/npu1`, '--kubeconfig', operator])).out).toMatch(
      /^clear already requested/,
    );
    expect(await clearOf(nodes.a)).toBe('all');
    await annotate(nodes.a, { [CLEAR]: null });
  });

  it('replaces a value the controller would refuse', async () => {
    await annotate(nodes.c, { [CLEAR]: 'npu1,,npu2' });
    const { code, out } = await cli(['clear', `${nodes.c}/npu0`, '--kubeconfig', operator]);
    expect(code).toBe(0);
    expect(out).toMatch(/; replaced the invalid value "npu1,,npu2"\n$/);
    expect(await clearOf(nodes.c)).toBe('npu0');
    await annotate(nodes.c, { [CLEAR]: null });
  });

  it('names a node that does not exist in one line, exit 1', async () => {
    const missing = `${ns.name}-missing`;
    expect(await cli(['clear', `${missing}/npu0`, '--kubeconfig', operator])).toEqual({
      code: 1,
      out: '',
      err: `npu-fault clear: node "${missing}" not found\n`,
    });
  });

  it('--wait returns once the annotation is removed (as the controller does after publishing)', async () => {
    const waiting = cli(['clear', `${nodes.b}/npu2`, '--wait', '--timeout', '60s', '--kubeconfig', operator]);
    // Stand in for the controller: once the request is on the Node, apply it by removing it.
    await watchUntil<k8s.V1Node>(
      ns.admin,
      '/api/v1/nodes',
      (node) => node.metadata?.annotations?.[CLEAR] === 'npu2',
      {
        fieldSelector: `metadata.name=${nodes.b}`,
        timeoutMs: 30_000,
        what: 'the clear annotation set',
      },
    );
    await annotate(nodes.b, { [CLEAR]: null });
    const { code, out, err } = await waiting;
    expect([code, err]).toEqual([0, '']);
    expect(out.trim().split('\n')).toEqual([
      `clear requested: node ${nodes.b}, device npu2 (${CLEAR}=npu2)`,
      `cleared: the controller applied the clear on node ${nodes.b} and published it`,
    ]);
  });

  it('--wait times out with one line when nothing removes the annotation', async () => {
    const started = Date.now();
    const { code, err } = await cli([
      'clear',
      nodes.c,
      '--wait',
      '--timeout=1500ms',
      '--kubeconfig',
      operator,
    ]);
    expect(code).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
    expect(err).toBe(
      `npu-fault clear: timed out after 1500ms waiting for the controller to apply the clear on node ${nodes.c} ` +
        `(${CLEAR} is still set; is a controller running and leading?)\n`,
    );
    await annotate(nodes.c, { [CLEAR]: null });
  });
});

describe('npu-fault remediation', () => {
  const open: BreakerState = {
    state: 'open',
    openedAt: '2026-12-01T09:00:00.000Z',
    reason: '3 of 10 accelerator nodes unhealthy',
    unhealthy: [],
    acknowledged: [],
    closedAt: null,
    closedBy: null,
  };

  it('reset closes an open breaker and acknowledges its nodes; a second reset finds it closed', async () => {
    await storeBreaker(JSON.stringify({ ...open, unhealthy: [nodes.b, nodes.a] }));
    const { code, out, err } = await cli([
      'remediation',
      'reset',
      '--namespace',
      ns.name,
      '--kubeconfig',
      operator,
    ]);
    expect([code, err]).toEqual([0, '']);
    const by = `system:serviceaccount:${ns.name}:${OPERATOR_SERVICE_ACCOUNT}`;
    expect(out).toBe(`breaker closed by ${by}; 2 nodes acknowledged: ${nodes.a}, ${nodes.b}\n`);
    expect(await storedBreaker()).toMatchObject({
      state: 'closed',
      acknowledged: [nodes.a, nodes.b],
      closedBy: by,
      closedAt: expect.stringMatching(/^\d{4}-/),
    });

    const again = await cli([
      'remediation',
      'reset',
      '--namespace',
      ns.name,
      '--kubeconfig',
      operator,
      '--by',
      'x',
    ]);
    expect(again.code).toBe(0);
    expect(again.out).toMatch(/^breaker is already closed \(last closed .* by system:serviceaccount:/);
  });

  it('reset refuses an invalid record naming the field, and --force replaces it', async () => {
    await storeBreaker(JSON.stringify({ ...open, unhealthy: 'everything' }));
    const refused = await cli(['remediation', 'reset', '--namespace', ns.name, '--kubeconfig', operator]);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(
      new RegExp(
        `^npu-fault remediation reset: ${ns.name}/${BREAKER_CONFIGMAP}/${BREAKER_KEY}/unhealthy: [^\\n]*; --force replaces it with a closed breaker\\n$`,
      ),
    );
    const forced = await cli([
      'remediation',
      'reset',
      '--namespace',
      ns.name,
      '--kubeconfig',
      operator,
      '--force',
      '--by',
      'alice',
    ]);
    expect(forced.code).toBe(0);
    expect(await storedBreaker()).toMatchObject({ state: 'closed', closedBy: 'alice', unhealthy: [] });
  });

  it('reset of a breaker that never opened (no ConfigMap) says so, exit 0', async () => {
    await core.deleteNamespacedConfigMap({ name: BREAKER_CONFIGMAP, namespace: ns.name });
    const { code, out } = await cli([
      'remediation',
      'reset',
      '--namespace',
      ns.name,
      '--kubeconfig',
      operator,
    ]);
    expect(code).toBe(0);
    expect(out).toBe(
      `breaker is closed: ${ns.name}/${BREAKER_CONFIGMAP} does not exist (it has never opened); nothing to do\n`,
    );
  });

  it('status shows the breaker and the nodes under remediation or in maintenance', async () => {
    await storeBreaker(JSON.stringify({ ...open, unhealthy: [nodes.a] }));
    const record = {
      phase: 'cordoned',
      by: 'controller-0',
      term: 1,
      since: '2026-12-01T09:01:00.000Z',
      reason: 'npu3: pcie-link-down',
      devices: [],
      tainted: true,
      drainStartedAt: null,
      drainFinishedAt: null,
      blocking: [],
      recoveredAt: null,
      releasedAt: null,
    };
    await annotate(nodes.a, { [REMEDIATION_ANNOTATION]: JSON.stringify(record) });
    await annotate(nodes.b, { [MAINTENANCE_ANNOTATION]: 'driver upgrade' });
    try {
      const json = await cli([
        'remediation',
        'status',
        '--namespace',
        ns.name,
        '-o',
        'json',
        '--kubeconfig',
        operator,
      ]);
      expect([json.code, json.err]).toEqual([0, '']);
      const report = JSON.parse(json.out) as { breaker: BreakerState; nodes: { name: string }[] };
      expect(report.breaker).toMatchObject({ state: 'open', unhealthy: [nodes.a] });
      const ours = report.nodes.filter((n) => n.name.startsWith(`${ns.name}-`));
      expect(ours).toEqual([
        {
          name: nodes.a,
          phase: 'cordoned',
          since: record.since,
          reason: record.reason,
          maintenance: null,
          unschedulable: false,
        },
        {
          name: nodes.b,
          phase: null,
          since: null,
          reason: null,
          maintenance: 'driver upgrade',
          unschedulable: false,
        },
      ]);
      const table = await cli(['remediation', 'status', '--namespace', ns.name, '--kubeconfig', operator]);
      expect(table.out).toMatch(new RegExp(`^Breaker \\(${ns.name}/${BREAKER_CONFIGMAP}\\): OPEN since `));
      expect(table.out).toMatch(
        new RegExp(`\\n${nodes.a} +cordoned +${record.since} +no +- +npu3: pcie-link-down\\n`),
      );
    } finally {
      await annotate(nodes.a, { [REMEDIATION_ANNOTATION]: null });
      await annotate(nodes.b, { [MAINTENANCE_ANNOTATION]: null });
    }
  });
});

describe('without the operator roles', () => {
  it('each command fails with one line naming the missing permission', async () => {
    const user = `system:serviceaccount:${ns.name}:nobody`;
    expect(await cli(['clear', `${nodes.a}/npu0`, '--kubeconfig', nobody])).toEqual({
      code: 1,
      out: '',
      err:
        `npu-fault clear: forbidden: ${user} may not get nodes "${nodes.a}" (cluster-wide); ` +
        "it needs 'get' on nodes, which the npu-fault-operator role grants (k8s/operator/rbac.yaml)\n",
    });
    const reset = await cli(['remediation', 'reset', '--namespace', ns.name, '--kubeconfig', nobody]);
    expect(reset.code).toBe(1);
    expect(reset.err).toBe(
      `npu-fault remediation reset: forbidden: ${user} may not get configmaps "${BREAKER_CONFIGMAP}" (in namespace ${ns.name}); ` +
        "it needs 'get' on configmaps, which the npu-fault-operator role grants (k8s/operator/rbac.yaml)\n",
    );
    const status = await cli(['remediation', 'status', '--namespace', ns.name, '--kubeconfig', nobody]);
    expect(status.code).toBe(1);
    expect(status.err).toMatch(
      /^npu-fault remediation status: forbidden: .* may not (get configmaps|list nodes)/,
    );
  });

  it('the real process prints the same one line and exits 1', async () => {
    const failure = await promisify(execFile)(
      process.execPath,
      [BIN, 'clear', nodes.a, `--kubeconfig=${nobody}`],
      {
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
      },
    ).then(
      () => undefined,
      (error: { code?: number; stdout?: string; stderr?: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stdout).toBe('');
    expect(failure?.stderr).toMatch(
      /^npu-fault clear: forbidden: system:serviceaccount:[^\n]* may not get nodes "[^"]+" \(cluster-wide\); [^\n]*\n$/,
    );
  });
});

describe('the operator roles', () => {
  it('grant what the commands need and nothing beside it', async () => {
    const authz = access.kubeConfig.makeApiClient(k8s.AuthorizationV1Api);
    const can = async (attributes: k8s.V1ResourceAttributes): Promise<boolean> =>
      (await authz.createSelfSubjectAccessReview({ body: { spec: { resourceAttributes: attributes } } }))
        .status?.allowed === true;
    const configMap = (name: string, verb: string, namespace = ns.name): k8s.V1ResourceAttributes => ({
      verb,
      resource: 'configmaps',
      name,
      namespace,
    });
    for (const verb of ['get', 'list', 'watch', 'patch'])
      expect(await can({ verb, resource: 'nodes' })).toBe(true);
    expect(await can({ verb: 'update', resource: 'nodes' })).toBe(false);
    expect(await can({ verb: 'delete', resource: 'nodes' })).toBe(false);
    expect(await can({ verb: 'patch', resource: 'nodes', subresource: 'status' })).toBe(false);
    expect(await can(configMap(BREAKER_CONFIGMAP, 'get'))).toBe(true);
    expect(await can(configMap(BREAKER_CONFIGMAP, 'update'))).toBe(true);
    expect(await can(configMap(BREAKER_CONFIGMAP, 'delete'))).toBe(false);
    expect(await can(configMap('npu-fault-rules', 'update'))).toBe(false);
    expect(await can(configMap('npu-fault-remediation', 'update'))).toBe(false);
    // The published status, here and in a mirror namespace; read-only.
    expect(await can(configMap('npu-fault-status-v3', 'get', 'team-a'))).toBe(true);
    expect(await can(configMap('npu-fault-status-v3', 'update'))).toBe(false);
    expect(await can(configMap(BREAKER_CONFIGMAP, 'update', 'default'))).toBe(false);
  });
});
