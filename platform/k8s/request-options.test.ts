import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { requestOptions } from './request-options.js';

/** An "apiserver" answering every request with `status` and `body`, recording what it was sent. */
async function apiserver(): Promise<{
  url: string;
  answer: (status: number, body: unknown) => void;
  sent: { method?: string; contentType?: string }[];
  close: () => Promise<void>;
}> {
  let reply = { status: 200, body: '{}' };
  const sent: { method?: string; contentType?: string }[] = [];
  const server: Server = createServer((req, res) => {
    sent.push({ method: req.method, contentType: req.headers['content-type'] });
    req.resume();
    req.on('end', () => {
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    answer: (status, body) => {
      reply = { status, body: JSON.stringify(body) };
    },
    sent,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function coreApi(server: string): k8s.CoreV1Api {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kubeConfig.makeApiClient(k8s.CoreV1Api);
}

const NODE = {
  kind: 'Node',
  apiVersion: 'v1',
  metadata: { name: 'gpu-1', resourceVersion: '7', labels: { a: 'b' } },
  status: { conditions: [{ type: 'Ready', status: 'True' }] },
};

describe('requestOptions', () => {
  let server: Awaited<ReturnType<typeof apiserver>>;
  beforeEach(async () => {
    server = await apiserver();
  });
  afterEach(async () => {
    await server.close();
  });

  it('sets the patch Content-Type and, by default, returns the parsed answer', async () => {
    server.answer(200, NODE);
    const node = await coreApi(server.url).patchNodeStatus(
      { name: 'gpu-1', body: { status: {} } },
      requestOptions({ patch: 'application/strategic-merge-patch+json' }),
    );
    expect(server.sent[0]).toEqual({
      method: 'PATCH',
      contentType: 'application/strategic-merge-patch+json',
    });
    expect(node.metadata?.resourceVersion).toBe('7');
  });

  it('with discardAnswer resolves a success without parsing its body', async () => {
    server.answer(200, NODE);
    const api = coreApi(server.url);
    const node = await api.patchNodeStatus(
      { name: 'gpu-1', body: { status: {} } },
      requestOptions({ patch: 'application/strategic-merge-patch+json', discardAnswer: true }),
    );
    expect(node.metadata).toBeUndefined();
    // The connection is free for the next call.
    server.answer(200, NODE);
    await expect(
      api.patchNodeStatus({ name: 'gpu-1', body: {} }, requestOptions({ discardAnswer: true })),
    ).resolves.toBeDefined();
  });

  it('with discardAnswer still parses a failure, so callers see its status and message', async () => {
    server.answer(422, {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      message: 'the test operation failed',
      reason: 'Invalid',
      code: 422,
    });
    await expect(
      coreApi(server.url).patchNode(
        { name: 'gpu-1', body: [] },
        requestOptions({ patch: 'application/json-patch+json', discardAnswer: true }),
      ),
    ).rejects.toMatchObject({ code: 422, body: expect.stringContaining('the test operation failed') });
  });
});
