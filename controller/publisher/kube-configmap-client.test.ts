import { describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { K8sApiError } from '../../platform/index.js';
import { createKubeConfigMapClient } from './kube-configmap-client.js';

const KEY = { namespace: 'ai-infra', name: 'npu-fault-status-v3' };
const signal = new AbortController().signal;

/** A stand-in CoreV1Api that records what it is sent. */
function stubApi(answers: { read?: () => k8s.V1ConfigMap; fail?: () => never } = {}) {
  const sent: { op: string; param: Record<string, unknown> }[] = [];
  let version = 10;
  const write =
    (op: string) =>
    (param: { body: k8s.V1ConfigMap }): Promise<k8s.V1ConfigMap> => {
      sent.push({ op, param });
      answers.fail?.();
      return Promise.resolve({
        ...param.body,
        metadata: { ...param.body.metadata, uid: 'u-1', resourceVersion: String(++version) },
      });
    };
  const api = {
    readNamespacedConfigMap: () => Promise.resolve((answers.read ?? notFound)()),
    createNamespacedConfigMap: write('create'),
    replaceNamespacedConfigMap: write('replace'),
    deleteNamespacedConfigMap: (param: Record<string, unknown>) => {
      sent.push({ op: 'delete', param });
      answers.fail?.();
      return Promise.resolve({});
    },
  };
  return { api: api as unknown as k8s.CoreV1Api, sent };
}

function notFound(): never {
  throw new k8s.ApiException(404, 'Not Found', JSON.stringify({ kind: 'Status', reason: 'NotFound' }), {});
}

describe('createKubeConfigMapClient', () => {
  it('reads a missing ConfigMap as undefined and an existing one as its version, uid, labels and data', async () => {
    expect(await createKubeConfigMapClient(stubApi().api).get(KEY, signal)).toBeUndefined();
    const { api } = stubApi({
      read: () => ({ metadata: { resourceVersion: '5', uid: 'u', labels: { a: 'b' } }, data: { k: 'v' } }),
    });
    expect(await createKubeConfigMapClient(api).get(KEY, signal)).toEqual({
      resourceVersion: '5',
      uid: 'u',
      labels: { a: 'b' },
      data: { k: 'v' },
    });
  });

  it('replaces at the given resourceVersion, keeping what others set on the object and merging labels', async () => {
    const { api, sent } = stubApi({
      read: () => ({
        metadata: {
          name: KEY.name,
          namespace: KEY.namespace,
          resourceVersion: '5',
          uid: 'u',
          labels: { team: 'x', 'app.kubernetes.io/name': 'old' },
          annotations: { note: 'kept' },
          managedFields: [{ manager: 'kubectl' }],
        },
        data: { old: 'data' },
        binaryData: { blob: 'AA==' },
      }),
    });
    const client = createKubeConfigMapClient(api);
    await client.get(KEY, signal);
    const stored = await client.replace(
      KEY,
      '5',
      { labels: { 'app.kubernetes.io/name': 'npu-fault' }, data: { new: 'data' } },
      signal,
    );
    const body = sent[0]?.param.body as k8s.V1ConfigMap;
    expect(body.metadata).toEqual({
      name: KEY.name,
      namespace: KEY.namespace,
      resourceVersion: '5',
      uid: 'u',
      labels: { team: 'x', 'app.kubernetes.io/name': 'npu-fault' },
      annotations: { note: 'kept' },
    });
    expect(body.data).toEqual({ new: 'data' });
    expect(body.binaryData).toBeUndefined();
    expect(stored.resourceVersion).toBe('11');
  });

  it('deletes with uid and resourceVersion preconditions', async () => {
    const { api, sent } = stubApi();
    await createKubeConfigMapClient(api).delete(KEY, { uid: 'u', resourceVersion: '7' }, signal);
    expect(sent[0]?.param).toEqual({ ...KEY, body: { preconditions: { uid: 'u', resourceVersion: '7' } } });
  });

  it('throws API failures as K8sApiError (a 409 stays a conflict)', async () => {
    const { api } = stubApi({
      fail: () => {
        throw new k8s.ApiException(
          409,
          'Conflict',
          JSON.stringify({ kind: 'Status', reason: 'Conflict' }),
          {},
        );
      },
    });
    const error = await createKubeConfigMapClient(api)
      .create(KEY, { labels: {}, data: {} }, signal)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(K8sApiError);
    expect(error).toMatchObject({ apiStatus: 409, reason: 'Conflict' });
  });
});
