import { describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { K8sApiError } from '../../platform/index.js';
import { createKubePodClient, podKey, summarisePod } from './pod-client.js';

/** What client-node's generated APIs throw: the body is the Status as response text. */
function apiException(
  code: number,
  reason: string,
  message: string,
  causes?: unknown[],
): k8s.ApiException<string> {
  const body = {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    code,
    reason,
    message,
    details: { causes },
  };
  return new k8s.ApiException(code, 'Unknown API Status Code!', JSON.stringify(body), {});
}

const signal = new AbortController().signal;

/** A CoreV1Api stand-in: only the calls the PodClient makes, recorded. */
function fakeApi(overrides: Partial<Record<string, (request: Record<string, unknown>) => unknown>>) {
  const requests: { call: string; request: Record<string, unknown> }[] = [];
  const calls = [
    'listPodForAllNamespaces',
    'createNamespacedPodEviction',
    'readNamespacedPod',
    'deleteNamespacedPod',
  ] as const;
  const api = Object.fromEntries(
    calls.map((call) => [
      call,
      async (request: Record<string, unknown>) => {
        requests.push({ call, request });
        const answer = overrides[call];
        return answer ? answer(request) : {};
      },
    ]),
  );
  return { api: api as unknown as k8s.CoreV1Api, requests };
}

const throwing = (error: unknown) => (): never => {
  throw error;
};

describe('summarisePod', () => {
  it('keeps what the drain decides on', () => {
    const summary = summarisePod({
      metadata: {
        namespace: 'ml',
        name: 'train-0',
        uid: 'u1',
        deletionTimestamp: new Date('2026-01-01T00:00:00Z'),
        annotations: { 'huawei.com/AscendReal': 'Ascend910-0' },
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'd', uid: 'x', controller: true },
        ],
      },
      spec: {
        containers: [
          {
            name: 'a',
            resources: { limits: { 'huawei.com/Ascend910': '1', cpu: '2' }, requests: { memory: '1Gi' } },
          },
        ],
        initContainers: [{ name: 'i', resources: { requests: { 'example.com/fpga': '1' } } }],
        volumes: [
          { name: 'scratch', emptyDir: {} },
          { name: 'conf', configMap: { name: 'c' } },
        ],
      },
      status: { phase: 'Running' },
    });
    expect(summary).toEqual({
      namespace: 'ml',
      name: 'train-0',
      uid: 'u1',
      phase: 'Running',
      terminating: true,
      daemonSet: true,
      mirror: false,
      annotations: { 'huawei.com/AscendReal': 'Ascend910-0' },
      emptyDirVolumes: ['scratch'],
      deviceResources: ['example.com/fpga', 'huawei.com/Ascend910'],
    });
    expect(podKey(summary)).toBe('ml/train-0');
  });

  it('counts only a controlling DaemonSet, and sees mirror pods', () => {
    const summary = summarisePod({
      metadata: {
        name: 'p',
        annotations: { 'kubernetes.io/config.mirror': 'abc' },
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'd', uid: 'x' }],
      },
    });
    expect(summary).toMatchObject({ daemonSet: false, mirror: true, terminating: false, phase: '' });
  });
});

describe('createKubePodClient', () => {
  it('lists the pods of a node in pages, all namespaces', async () => {
    const pages = [
      { items: [{ metadata: { namespace: 'a', name: 'p1', uid: '1' } }], metadata: { _continue: 'next' } },
      { items: [{ metadata: { namespace: 'b', name: 'p2', uid: '2' } }], metadata: {} },
    ];
    const { api, requests } = fakeApi({ listPodForAllNamespaces: () => pages.shift() });
    const pods = await createKubePodClient(api, { pageSize: 1 }).list('n1', signal);
    expect(pods.map(podKey)).toEqual(['a/p1', 'b/p2']);
    expect(requests.map((r) => r.request)).toEqual([
      { fieldSelector: 'spec.nodeName=n1', limit: 1, _continue: undefined },
      { fieldSelector: 'spec.nodeName=n1', limit: 1, _continue: 'next' },
    ]);
  });

  it('evicts through policy/v1 with the uid as a precondition', async () => {
    const { api, requests } = fakeApi({});
    expect(await createKubePodClient(api).evict('ml', 'p', 'u1', signal)).toEqual({ result: 'evicted' });
    expect(requests[0]?.request).toEqual({
      name: 'p',
      namespace: 'ml',
      body: {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: 'p', namespace: 'ml' },
        deleteOptions: { preconditions: { uid: 'u1' } },
      },
    });
  });

  it('answers 404 as gone, 429 as blocked with the budget named', async () => {
    const notFound = fakeApi({
      createNamespacedPodEviction: throwing(apiException(404, 'NotFound', 'pods "p" not found')),
    });
    expect(await createKubePodClient(notFound.api).evict('ml', 'p', 'u1', signal)).toEqual({
      result: 'gone',
    });
    const refused = apiException(
      429,
      'TooManyRequests',
      "Cannot evict pod as it would violate the pod's disruption budget.",
      [
        {
          reason: 'DisruptionBudget',
          message: 'The disruption budget web needs 1 healthy pods and has 1 currently',
        },
      ],
    );
    const blocked = fakeApi({ createNamespacedPodEviction: throwing(refused) });
    expect(await createKubePodClient(blocked.api).evict('ml', 'p', 'u1', signal)).toEqual({
      result: 'blocked',
      message:
        "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget web needs 1 healthy pods and has 1 currently",
    });
  });

  it('answers a 409 as gone when the name now belongs to another pod, else throws it', async () => {
    const conflict = apiException(
      409,
      'Conflict',
      'Precondition failed: UID in precondition: u1, UID in object meta: u2',
    );
    const replaced = fakeApi({
      createNamespacedPodEviction: throwing(conflict),
      readNamespacedPod: () => ({ metadata: { namespace: 'ml', name: 'p', uid: 'u2' } }),
    });
    expect(await createKubePodClient(replaced.api).evict('ml', 'p', 'u1', signal)).toEqual({
      result: 'gone',
    });
    const deleted = fakeApi({
      createNamespacedPodEviction: throwing(conflict),
      readNamespacedPod: throwing(apiException(404, 'NotFound', 'gone')),
    });
    expect(await createKubePodClient(deleted.api).evict('ml', 'p', 'u1', signal)).toEqual({ result: 'gone' });
    const raced = fakeApi({
      createNamespacedPodEviction: throwing(conflict),
      readNamespacedPod: () => ({ metadata: { namespace: 'ml', name: 'p', uid: 'u1' } }),
    });
    await expect(createKubePodClient(raced.api).evict('ml', 'p', 'u1', signal)).rejects.toMatchObject({
      apiStatus: 409,
    });
  });

  it('throws other failures as K8sApiError, and anything else as it came', async () => {
    const failing = fakeApi({
      createNamespacedPodEviction: throwing(
        apiException(500, 'InternalError', 'This pod has more than one PodDisruptionBudget'),
      ),
    });
    const error = await createKubePodClient(failing.api)
      .evict('ml', 'p', undefined, signal)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(K8sApiError);
    expect((error as K8sApiError).message).toMatch(/500 InternalError: This pod has more than one/);
    const refused = new Error('connect ECONNREFUSED');
    const down = fakeApi({ listPodForAllNamespaces: throwing(refused) });
    await expect(createKubePodClient(down.api).list('n1', signal)).rejects.toBe(refused);
  });

  it('gets a pod or null, deletes with the uid precondition', async () => {
    const { api, requests } = fakeApi({ readNamespacedPod: () => ({ metadata: { name: 'p', uid: 'u1' } }) });
    const client = createKubePodClient(api);
    expect((await client.get('ml', 'p', signal))?.uid).toBe('u1');
    expect(await client.delete('ml', 'p', 'u1', signal)).toBe('deleted');
    expect(requests[1]?.request).toEqual({
      name: 'p',
      namespace: 'ml',
      body: { preconditions: { uid: 'u1' } },
    });
    const missing = fakeApi({
      readNamespacedPod: throwing(apiException(404, 'NotFound', 'x')),
      deleteNamespacedPod: throwing(apiException(409, 'Conflict', 'Precondition failed')),
    });
    expect(await createKubePodClient(missing.api).get('ml', 'p', signal)).toBeNull();
    expect(await createKubePodClient(missing.api).delete('ml', 'p', 'u1', signal)).toBe('gone');
  });
});
