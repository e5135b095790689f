import { describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { K8sApiError } from '../../index.js';
import {
  createKubeListWatchClient,
  setIdleTimeout,
  type KubeCollection,
  type ListPage,
} from './kube-list-watch-client.js';

function kubeConfig(): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

/** A collection whose pages come from a table, recording the requests. */
function pagedCollection(pages: ListPage[], failAt?: { page: number; error: unknown }) {
  const requests: { limit: number; continue?: string }[] = [];
  const collection: KubeCollection = {
    path: '/api/v1/things',
    labelSelector: 'a=b',
    listPage(page) {
      requests.push(page);
      if (failAt && requests.length === failAt.page) return Promise.reject(failAt.error);
      return Promise.resolve(pages[requests.length - 1] as ListPage);
    },
  };
  return { collection, requests };
}

describe('kube list+watch client', () => {
  it("sets client-node Watch's private idle timeout (fails if an upgrade renames the field)", () => {
    const watch = new k8s.Watch(kubeConfig());
    const fields = watch as unknown as { requestTimeoutMs: unknown };
    expect(fields.requestTimeoutMs).toBe(30_000);
    setIdleTimeout(watch, 180_000);
    expect(fields.requestTimeoutMs).toBe(180_000);
  });

  it('lists page by page with continue tokens and returns the first page resourceVersion', async () => {
    const { collection, requests } = pagedCollection([
      { items: [{ metadata: { name: 'a' } }], metadata: { resourceVersion: '10', _continue: 'tok1' } },
      { items: [{ metadata: { name: 'b' } }], metadata: { resourceVersion: '10', _continue: 'tok2' } },
      { items: [{ metadata: { name: 'c' } }], metadata: { resourceVersion: '10' } },
    ]);
    const client = createKubeListWatchClient(kubeConfig(), collection, { pageSize: 1 });
    const seen: string[][] = [];
    const result = await client.list(
      (items) => seen.push(items.map((i) => i.metadata?.name ?? '')),
      new AbortController().signal,
    );
    expect(result).toEqual({ resourceVersion: '10' });
    expect(seen).toEqual([['a'], ['b'], ['c']]);
    expect(requests).toEqual([
      { limit: 1, continue: undefined },
      { limit: 1, continue: 'tok1' },
      { limit: 1, continue: 'tok2' },
    ]);
    expect(client.description).toBe('/api/v1/things?labelSelector=a=b');
  });

  it('a failed page fails the list as a K8sApiError (a 410 on an expired continue token included)', async () => {
    const expired = Object.assign(new Error('HTTP-Code: 410'), {
      code: 410,
      body: JSON.stringify({
        kind: 'Status',
        code: 410,
        reason: 'Expired',
        message: 'continue token expired',
      }),
    });
    const { collection } = pagedCollection(
      [{ items: [], metadata: { resourceVersion: '10', _continue: 'tok1' } }],
      { page: 2, error: expired },
    );
    const client = createKubeListWatchClient(kubeConfig(), collection);
    const failure = client.list(() => undefined, new AbortController().signal);
    await expect(failure).rejects.toBeInstanceOf(K8sApiError);
    await expect(failure).rejects.toMatchObject({ apiStatus: 410, reason: 'Expired' });
  });
});
