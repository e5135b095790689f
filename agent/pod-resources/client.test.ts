/**
 * The PodResources client against a fake kubelet serving the real proto on a unix socket:
 * an answer decoded, and every way the socket can fail, each a one-line error of its kind.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createPodResourcesClient, PodResourcesError, type PodResourcesClient } from './client.js';
import { containerWith, startFakePodResources, type FakeAnswer, type FakePodResources } from './testing.js';

const RESPONSE = {
  pod_resources: [
    {
      name: 'train-0',
      namespace: 'team-a',
      containers: [containerWith('main', { 'huawei.com/Ascend910': ['Ascend910-1'] })],
    },
  ],
};

describe('PodResources client', () => {
  let fake: FakePodResources | undefined;
  let client: PodResourcesClient | undefined;
  afterEach(async () => {
    client?.close();
    await fake?.close();
    fake = undefined;
    client = undefined;
  });

  async function serve(
    answer: () => FakeAnswer,
    options: { timeoutMs?: number; maxMessageBytes?: number } = {},
  ) {
    fake = await startFakePodResources(answer);
    client = createPodResourcesClient({
      socket: fake.socket,
      timeoutMs: options.timeoutMs ?? 2000,
      maxMessageBytes: options.maxMessageBytes ?? 1 << 20,
    });
    return client;
  }

  const failure = async (promise: Promise<unknown>): Promise<PodResourcesError> => {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PodResourcesError);
    return error as PodResourcesError;
  };

  it('decodes List as the kubelet sends it (field names as in the proto, absent lists empty)', async () => {
    const c = await serve(() => ({ response: RESPONSE }));
    const answer = (await c.list()) as typeof RESPONSE;
    expect(answer.pod_resources[0]).toMatchObject({
      name: 'train-0',
      namespace: 'team-a',
      containers: [
        {
          name: 'main',
          devices: [{ resource_name: 'huawei.com/Ascend910', device_ids: ['Ascend910-1'] }],
          dynamic_resources: [],
        },
      ],
    });
    expect(fake?.calls()).toBe(1);
  });

  it('fails at once as unavailable when the socket is absent (never waits for it to appear)', async () => {
    // A deadline of an hour: a client that waited for the socket could only end as `timeout`
    // (never within the test), so `unavailable` says it gave up without waiting.
    client = createPodResourcesClient({
      socket: join(tmpdir(), `absent-${process.pid}`, 'kubelet.sock'),
      timeoutMs: 3_600_000,
      maxMessageBytes: 1 << 20,
    });
    const error = await failure(client.list());
    expect(error.result).toBe('unavailable');
    expect(error.message).toMatch(/^kubelet socket .*kubelet\.sock unavailable: /);
  });

  it('gives up on a server that hangs past the deadline', async () => {
    const c = await serve(() => ({ hang: true }), { timeoutMs: 300 });
    const error = await failure(c.list());
    expect(error.result).toBe('timeout');
    expect(error.message).toContain('within 300 ms');
  });

  it('refuses garbage bytes as malformed', async () => {
    const c = await serve(() => ({ raw: Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x0a]) }));
    expect((await failure(c.list())).result).toBe('malformed');
  });

  it('refuses an answer over the size bound', async () => {
    const pods = Array.from({ length: 200 }, (_, i) => ({ ...RESPONSE.pod_resources[0], name: `pod-${i}` }));
    const c = await serve(() => ({ response: { pod_resources: pods } }), { maxMessageBytes: 4096 });
    expect((await failure(c.list())).result).toBe('too-large');
  });

  it('reports a kubelet error with its status', async () => {
    const c = await serve(() => ({ status: grpc.status.PERMISSION_DENIED, details: 'no' }));
    const error = await failure(c.list());
    expect(error.result).toBe('error');
    expect(error.message).toBe('List failed (PERMISSION_DENIED): no');
  });

  it('reconnects after the kubelet comes back on the same socket', async () => {
    const c = await serve(() => ({ response: RESPONSE }));
    await c.list();
    const socket = fake?.socket ?? '';
    await fake?.close();
    expect((await failure(c.list())).result).toBe('unavailable');
    // A new kubelet on the same path (the fake's directory is gone: make it again).
    const { mkdirSync } = await import('node:fs');
    const { dirname } = await import('node:path');
    mkdirSync(dirname(socket), { recursive: true });
    const server = new grpc.Server();
    const { PODRESOURCES_SERVICE } = await import('./grpc-channel.js');
    server.addService(PODRESOURCES_SERVICE, {
      List: (_: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { pod_resources: [] }),
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (e) =>
        e ? reject(e) : resolve(),
      ),
    );
    try {
      // grpc-js redials on its own backoff (at most 5 s): wait for the call to get through.
      const deadline = Date.now() + 10_000;
      let answer: unknown;
      while (answer === undefined && Date.now() < deadline)
        answer = await c
          .list()
          .catch((e: unknown) => (e instanceof PodResourcesError ? undefined : Promise.reject(e)));
      expect(answer).toEqual({ pod_resources: [] });
    } finally {
      server.forceShutdown();
    }
  }, 20_000);
});
