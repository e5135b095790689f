import { describe, expect, it } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { K8sApiError } from '../../../platform/index.js';
import { createKubeDeviceTaintClient } from './client.js';
import type { DesiredRule } from './desired.js';

interface Call {
  verb: string;
  version: string;
  plural: string;
  name?: string;
  body?: unknown;
  labelSelector?: string;
  fieldSelector?: string;
}

/** CustomObjectsApi as the apiserver of `served` versions answers (404 for the others). */
function api(served: readonly string[]): { api: k8s.CustomObjectsApi; calls: Call[] } {
  const calls: Call[] = [];
  const answer = (call: Call, value: unknown): Promise<unknown> => {
    calls.push(call);
    if (call.plural === 'devicetaintrules' && !served.includes(call.version))
      return Promise.reject(new K8sApiError(404, 'NotFound'));
    return Promise.resolve(value);
  };
  const stub = {
    listClusterCustomObject: (p: Call) => answer({ ...p, verb: 'list' }, { items: [] }),
    createClusterCustomObject: (p: Call) => answer({ ...p, verb: 'create' }, {}),
    replaceClusterCustomObject: (p: Call) => answer({ ...p, verb: 'replace' }, {}),
    deleteClusterCustomObject: (p: Call) => answer({ ...p, verb: 'delete' }, {}),
  };
  return { api: stub as unknown as k8s.CustomObjectsApi, calls };
}

const RULE: DesiredRule = {
  name: 'npu-fault-n1-gpu0-0123456789',
  node: 'n1',
  deviceKey: '0000:3b:00.0',
  driver: 'fake.npu-fault.io',
  pool: 'n1',
  device: 'gpu0',
  taint: { key: 'npu-fault.io/device-failed', value: 'failed', effect: 'NoSchedule' },
};

describe('the DeviceTaintRule client', () => {
  const signal = new AbortController().signal;

  it('uses resource.k8s.io/v1 where served (1.37) and sends the rule selecting driver, pool and device', async () => {
    const { api: stub, calls } = api(['v1']);
    const client = createKubeDeviceTaintClient(stub, 'ai-infra');
    await client.listOwnedRules(signal);
    await client.create(RULE, signal);
    expect(calls.map((c) => `${c.verb} ${c.version}`)).toEqual(['list v1', 'list v1', 'create v1']);
    // Only this install's rules: another controller's (another namespace) are never touched.
    expect(calls[1]?.labelSelector).toBe(
      'app.kubernetes.io/managed-by=npu-fault,npu-fault.io/controller-namespace=ai-infra',
    );
    expect(calls[2]?.body).toEqual({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'DeviceTaintRule',
      metadata: {
        name: RULE.name,
        labels: {
          'app.kubernetes.io/managed-by': 'npu-fault',
          'npu-fault.io/controller-namespace': 'ai-infra',
        },
        annotations: { 'npu-fault.io/node': 'n1', 'npu-fault.io/device': '0000:3b:00.0' },
      },
      spec: {
        deviceSelector: { driver: 'fake.npu-fault.io', pool: 'n1', device: 'gpu0' },
        taint: { key: 'npu-fault.io/device-failed', value: 'failed', effect: 'NoSchedule' },
      },
    });
  });

  it('falls back to v1beta2 (1.36), and says which versions it tried when neither is served', async () => {
    const beta = api(['v1beta2']);
    const client = createKubeDeviceTaintClient(beta.api, 'ai-infra');
    await client.replace(RULE, '42', signal);
    await client.delete(RULE.name, '43', signal);
    expect(beta.calls.map((c) => `${c.verb} ${c.version}`)).toEqual([
      'list v1',
      'list v1beta2',
      'replace v1beta2',
      'delete v1beta2',
    ]);
    expect((beta.calls[2]?.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion).toBe(
      '42',
    );
    expect(beta.calls[3]?.body).toEqual({ preconditions: { resourceVersion: '43' } });
    await expect(createKubeDeviceTaintClient(api([]).api, 'ai-infra').listOwnedRules(signal)).rejects.toThrow(
      /DeviceTaintRule is served at none of resource\.k8s\.io\/v1, v1beta2/,
    );
  });

  it('lists every ResourceSlice in one call, and takes a rule already gone as deleted', async () => {
    const { api: stub, calls } = api(['v1']);
    const client = createKubeDeviceTaintClient(stub, 'ai-infra');
    await client.listSlices(signal);
    expect(calls).toEqual([
      { group: 'resource.k8s.io', plural: 'resourceslices', version: 'v1', verb: 'list' },
    ]);
    const gone = {
      listClusterCustomObject: () => Promise.resolve({ items: [] }),
      deleteClusterCustomObject: () => Promise.reject(new K8sApiError(404, 'NotFound')),
    } as unknown as k8s.CustomObjectsApi;
    await expect(
      createKubeDeviceTaintClient(gone, 'ai-infra').delete('x', '1', signal),
    ).resolves.toBeUndefined();
  });

  it('makes the rule a dependent of the granting ClusterRole it reads, and reads none it may not', async () => {
    const { api: stub, calls } = api(['v1']);
    const read: string[] = [];
    const rbac = (answer: () => Promise<unknown>) =>
      ({
        readClusterRole: (p: { name: string }) => {
          read.push(p.name);
          return answer();
        },
      }) as unknown as k8s.RbacAuthorizationV1Api;
    const client = createKubeDeviceTaintClient(stub, 'ai-infra', {
      rbac: rbac(() => Promise.resolve({ metadata: { name: 'grant-x', uid: 'u-1' } })),
      clusterRole: 'grant-x',
    });
    const grant = await client.grantOwner(signal);
    expect(read).toEqual(['grant-x']);
    expect(grant).toEqual({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      name: 'grant-x',
      uid: 'u-1',
    });
    await client.create(RULE, signal, grant);
    const created = calls.at(-1)?.body as { metadata: { ownerReferences?: unknown[] } };
    expect(created.metadata.ownerReferences).toEqual([grant]);
    for (const status of [403, 404]) {
      const denied = createKubeDeviceTaintClient(stub, 'ai-infra', {
        rbac: rbac(() => Promise.reject(new K8sApiError(status, 'x'))),
        clusterRole: 'grant-x',
      });
      await expect(denied.grantOwner(signal)).resolves.toBeUndefined();
    }
    await expect(createKubeDeviceTaintClient(stub, 'ai-infra').grantOwner(signal)).resolves.toBeUndefined();
  });

  it('uses exactly the verbs k8s/controller/device-taints grants (no more is granted)', async () => {
    const { api: stub, calls } = api(['v1']);
    const roles: string[] = [];
    const rbac = {
      readClusterRole: (p: { name: string }) => {
        roles.push(p.name);
        return Promise.resolve({ metadata: { uid: 'u' } });
      },
    } as unknown as k8s.RbacAuthorizationV1Api;
    const client = createKubeDeviceTaintClient(stub, 'ai-infra', {
      rbac,
      clusterRole: 'npu-fault-controller-device-taints',
    });
    await client.listSlices(signal);
    await client.listOwnedRules(signal);
    await client.grantOwner(signal);
    await client.create(RULE, signal);
    await client.replace(RULE, '1', signal);
    await client.delete(RULE.name, '2', signal);
    const used = new Set(calls.map((c) => `${c.plural} ${c.verb === 'replace' ? 'update' : c.verb}`));
    for (const name of roles) used.add(`clusterroles get ${name}`);
    const granted = new Set<string>();
    for (const document of parseAllDocuments(
      readFileSync(new URL('../../../k8s/controller/device-taints/rbac.yaml', import.meta.url), 'utf8'),
    )) {
      const role = document.toJS() as {
        kind: string;
        rules?: { resources: string[]; verbs: string[]; resourceNames?: string[] }[];
      };
      if (role.kind !== 'ClusterRole') continue;
      for (const rule of role.rules ?? [])
        for (const grant of rule.resources.flatMap((resource) =>
          rule.verbs.map((verb) => `${resource} ${verb}`),
        ))
          for (const name of rule.resourceNames ?? ['']) granted.add(name ? `${grant} ${name}` : grant);
    }
    expect([...granted].sort()).toEqual([...used].sort());
  });
});
