import { describe, expect, it } from '@jest/globals';
import { createServer } from 'node:net';
import { freeLoopbackPorts } from './state.js';

function canListenOn(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.on('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

describe('freeLoopbackPorts', () => {
  it('gives every name its own port, free to bind on loopback', async () => {
    const names = ['etcd', 'etcdPeer', 'apiserver', 'kwok'] as const;
    const ports = await freeLoopbackPorts(names);

    expect(Object.keys(ports).sort()).toEqual([...names].sort());
    const chosen = names.map((name) => ports[name]);
    expect(new Set(chosen).size).toBe(names.length);
    for (const port of chosen) {
      expect(port).toBeGreaterThan(0);
      expect(await canListenOn(port)).toBe(true);
    }
  });
});
