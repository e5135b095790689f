import { describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { kubeconfigYaml, newPlaneTokens } from './credentials.js';

describe('kubeconfigYaml', () => {
  it('is read by client-node as one token user trusting exactly the given certificate', () => {
    const caPem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const kc = new k8s.KubeConfig();
    kc.loadFromString(
      kubeconfigYaml({ server: 'https://127.0.0.1:6443', caPem, user: 'admin', token: 'secret-token' }),
    );

    expect(kc.getCurrentCluster()?.server).toBe('https://127.0.0.1:6443');
    expect(Buffer.from(kc.getCurrentCluster()?.caData ?? '', 'base64').toString()).toBe(caPem);
    expect(kc.getCurrentUser()).toMatchObject({ name: 'admin', token: 'secret-token' });
  });
});

describe('newPlaneTokens', () => {
  it('gives the admin and the controller-manager different tokens, and each plane its own', () => {
    const first = newPlaneTokens();
    const second = newPlaneTokens();
    expect(first.admin).not.toBe(first.controllerManager);
    expect(second.admin).not.toBe(first.admin);
  });
});
