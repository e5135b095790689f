import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { shareConnections } from './shared-connections.js';

/**
 * An "apiserver" answering every request with an empty NamespaceList, counting its
 * connections. Plain HTTP: a cluster that skips TLS verification still gets a dispatcher per
 * request from client-node (its TLS options are not empty), which is what is counted here.
 */
async function apiserver(): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"kind":"NamespaceList","apiVersion":"v1","metadata":{},"items":[]}');
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function kubeConfigFor(server: string): k8s.KubeConfig {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
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

  it('makes sequential API calls share one connection', async () => {
    const api = shareConnections(kubeConfigFor(server.url)).makeApiClient(k8s.CoreV1Api);
    for (let i = 0; i < 10; i++) await api.listNamespace();
    // undici may open a second while the first answer's connection is being handed back.
    expect(server.connections()).toBeLessThanOrEqual(2);
  });

  it('is what makes the difference: client-node alone opens a connection per call', async () => {
    const api = kubeConfigFor(server.url).makeApiClient(k8s.CoreV1Api);
    for (let i = 0; i < 3; i++) await api.listNamespace();
    expect(server.connections()).toBe(3);
  });

  it('opens a new pool when the TLS settings change, and is idempotent', async () => {
    const kubeConfig = shareConnections(shareConnections(kubeConfigFor(server.url)));
    const api = kubeConfig.makeApiClient(k8s.CoreV1Api);
    for (let i = 0; i < 5; i++) await api.listNamespace();
    const before = server.connections();
    expect(before).toBeLessThanOrEqual(2);
    // The cluster now names a TLS server name: other TLS options, another pool.
    (kubeConfig.getCurrentCluster() as { tlsServerName?: string }).tlsServerName = 'apiserver.example';
    for (let i = 0; i < 5; i++) await api.listNamespace();
    expect(server.connections()).toBeGreaterThan(before);
    expect(server.connections()).toBeLessThanOrEqual(before + 2);
  });
});
