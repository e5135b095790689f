import { describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { isConflict } from '../../platform/index.js';
import { createKubeLeaseClient } from './kube-lease-client.js';

const KEY = { namespace: 'ns', name: 'lease' };

/** A stand-in CoordinationV1Api that records what it is sent. */
function stubApi(answers: { read?: () => k8s.V1Lease; write?: (body: k8s.V1Lease) => k8s.V1Lease }): {
  api: k8s.CoordinationV1Api;
  sent: { body: k8s.V1Lease; options: k8s.ConfigurationOptions | undefined }[];
} {
  const sent: { body: k8s.V1Lease; options: k8s.ConfigurationOptions | undefined }[] = [];
  const write = (param: { body: k8s.V1Lease }, options?: k8s.ConfigurationOptions): Promise<k8s.V1Lease> => {
    sent.push({ body: param.body, options });
    return Promise.resolve((answers.write ?? ((b) => b))(param.body));
  };
  const api = {
    readNamespacedLease: () => Promise.resolve((answers.read ?? notFound)()),
    createNamespacedLease: write,
    replaceNamespacedLease: write,
  };
  return { api: api as unknown as k8s.CoordinationV1Api, sent };
}

function notFound(): never {
  throw new k8s.ApiException(404, 'Not Found', JSON.stringify({ kind: 'Status', reason: 'NotFound' }), {});
}

const stored = (
  resourceVersion: string,
  spec: k8s.V1LeaseSpec,
  labels?: Record<string, string>,
): k8s.V1Lease => ({
  metadata: { name: KEY.name, namespace: KEY.namespace, resourceVersion, labels },
  spec,
});

describe('createKubeLeaseClient', () => {
  it('writes MicroTime with six fractional digits (the apiserver refuses three)', async () => {
    const { api, sent } = stubApi({
      write: (b) => ({ ...b, metadata: { ...b.metadata, resourceVersion: '7' } }),
    });
    const at = Date.UTC(2026, 0, 1, 12, 0, 0, 123);
    const created = await createKubeLeaseClient(api).create(
      KEY,
      { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: at, renewTime: at, leaseTransitions: 0 },
      new AbortController().signal,
    );
    const json = JSON.parse(JSON.stringify(sent[0]?.body)) as { spec: Record<string, unknown> };
    expect(json.spec).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: '2026-01-01T12:00:00.123000Z',
      renewTime: '2026-01-01T12:00:00.123000Z',
      leaseTransitions: 0,
    });
    expect(created).toEqual({
      resourceVersion: '7',
      spec: {
        holderIdentity: 'a',
        leaseDurationSeconds: 15,
        acquireTime: at,
        renewTime: at,
        leaseTransitions: 0,
      },
    });
  });

  it('reads an absent lease as undefined, and microsecond times from the API as epoch ms', async () => {
    expect(
      await createKubeLeaseClient(stubApi({}).api).get(KEY, new AbortController().signal),
    ).toBeUndefined();
    const { api } = stubApi({
      read: () =>
        stored('5', { holderIdentity: '', renewTime: '2026-01-01T00:00:01.500250Z' as unknown as Date }),
    });
    const lease = await createKubeLeaseClient(api).get(KEY, new AbortController().signal);
    expect(lease?.spec.holderIdentity).toBeUndefined();
    expect(lease?.spec.renewTime).toBe(Date.UTC(2026, 0, 1, 0, 0, 1, 500));
  });

  it('replaces at the given resourceVersion, keeping the metadata it read, and clears a released holder', async () => {
    const { api, sent } = stubApi({ read: () => stored('5', { holderIdentity: 'a' }, { team: 'infra' }) });
    const client = createKubeLeaseClient(api);
    await client.get(KEY, new AbortController().signal);
    await client.replace(
      KEY,
      '5',
      { holderIdentity: undefined, leaseDurationSeconds: 1 },
      new AbortController().signal,
    );
    expect(sent[0]?.body.metadata).toEqual({ ...stored('5', {}, { team: 'infra' }).metadata });
    expect(sent[0]?.body.spec).toEqual({ leaseDurationSeconds: 1 });
  });

  it('passes the abort signal to the request, and turns API failures into K8sApiError', async () => {
    const { api, sent } = stubApi({
      write: () => {
        throw new k8s.ApiException(
          409,
          'Conflict',
          JSON.stringify({ kind: 'Status', reason: 'Conflict' }),
          {},
        );
      },
    });
    const signal = new AbortController().signal;
    const error = await createKubeLeaseClient(api)
      .replace(KEY, '1', {}, signal)
      .catch((e: unknown) => e);
    expect(isConflict(error)).toBe(true);
    expect(error).toBeInstanceOf(Error);

    const middleware = sent[0]?.options?.middleware?.[0];
    const request = new k8s.RequestContext('https://apiserver.invalid/', 'PUT');
    await middleware?.pre(request).toPromise();
    expect(request.getSignal()).toBe(signal);
  });
});
