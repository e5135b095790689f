import { describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock, TOKEN_FILE_MAX_AGE_MS } from '../platform/index.js';
import { tokenSource } from './function.js';

describe('the function’s own token', () => {
  it('in a pod: the projected ServiceAccount token the in-cluster configuration names, read again once a minute', async () => {
    const root = mkdtempSync(join(tmpdir(), 'incluster-'));
    const dir = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'token'), 'first\n');
    writeFileSync(join(dir, 'ca.crt'), '');
    writeFileSync(join(dir, 'namespace'), 'ai-infra');
    const previous = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    process.env.KUBERNETES_SERVICE_HOST = '10.0.0.1';
    process.env.KUBERNETES_SERVICE_PORT = '443';
    try {
      const kc = new k8s.KubeConfig();
      kc.loadFromCluster(root);
      const clock = new FakeClock();
      const token = tokenSource(undefined, kc, clock);
      expect(await token()).toBe('first');
      writeFileSync(join(dir, 'token'), 'rotated\n');
      await clock.advance(TOKEN_FILE_MAX_AGE_MS);
      expect(await token()).toBe('rotated');
    } finally {
      process.env.KUBERNETES_SERVICE_HOST = previous.host;
      process.env.KUBERNETES_SERVICE_PORT = previous.port;
      if (previous.host === undefined) delete process.env.KUBERNETES_SERVICE_HOST;
      if (previous.port === undefined) delete process.env.KUBERNETES_SERVICE_PORT;
    }
  });

  it('out of a cluster: --token-file, else the kubeconfig user’s token, else a clear error', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'token-')), 'token');
    writeFileSync(file, 'from-file');
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:6443' }],
      users: [{ name: 'u', token: 'from-kubeconfig' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    expect(await tokenSource(file, kc, new FakeClock())()).toBe('from-file');
    expect(await tokenSource(undefined, kc, new FakeClock())()).toBe('from-kubeconfig');
    const none = new k8s.KubeConfig();
    none.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:6443' }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    expect(() => tokenSource(undefined, none, new FakeClock())).toThrow(/no token: give --token-file/);
  });
});
