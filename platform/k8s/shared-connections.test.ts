import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { shareConnections } from './shared-connections.js';

// The forwarder's test CA and a certificate for 127.0.0.1 (functions/forwarder/testdata).
const testdata = (file: string): Buffer =>
  readFileSync(fileURLToPath(new URL(`../../functions/forwarder/testdata/${file}`, import.meta.url)));

/** An https "apiserver" answering every request with an empty NamespaceList, counting its TLS connections. */
async function apiserver(): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const server: Server = createServer(
    { key: testdata('replica-key.pem'), cert: testdata('replica.pem') },
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"kind":"NamespaceList","apiVersion":"v1","metadata":{},"items":[]}');
    },
  );
  server.on('secureConnection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    connections: () => connections,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function kubeConfigFor(server: string, token: string): k8s.KubeConfig {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'c', server, caData: testdata('ca.pem').toString('base64'), skipTLSVerify: false }],
    users: [{ name: 'u', token }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kubeConfig;
}

describe('shareConnections', () => {
  let server: Awaited<ReturnType<typeof apiserver>>;
  beforeEach(async () => {
    server = await apiserver();
  });
  afterEach(async () => {
    await server.close();
  });

  it('makes sequential API calls share one TLS connection', async () => {
    const api = shareConnections(kubeConfigFor(server.url, 't')).makeApiClient(k8s.CoreV1Api);
    for (let i = 0; i < 10; i++) await api.listNamespace();
    // undici may open a second while the first answer's connection is being handed back.
    expect(server.connections()).toBeLessThanOrEqual(2);
  });

  it('is what makes the difference: client-node alone opens a connection per call', async () => {
    const api = kubeConfigFor(server.url, 't').makeApiClient(k8s.CoreV1Api);
    for (let i = 0; i < 3; i++) await api.listNamespace();
    expect(server.connections()).toBe(3);
  });

  it('opens a new pool when the TLS settings change, and is idempotent', async () => {
    const kubeConfig = shareConnections(shareConnections(kubeConfigFor(server.url, 't')));
    const api = kubeConfig.makeApiClient(k8s.CoreV1Api);
    for (let i = 0; i < 5; i++) await api.listNamespace();
    const before = server.connections();
    expect(before).toBeLessThanOrEqual(2);
    // The cluster now skips verification: other TLS options, another pool.
    (kubeConfig.getCurrentCluster() as { skipTLSVerify: boolean }).skipTLSVerify = true;
    for (let i = 0; i < 5; i++) await api.listNamespace();
    expect(server.connections()).toBeGreaterThan(before);
    expect(server.connections()).toBeLessThanOrEqual(before + 2);
  });
});
