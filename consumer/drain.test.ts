import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { drainOnFailure } from './drain.js';
import { createFollower, type Transport, type TransportSink } from './follower.js';
import { device, document, nodeEntry } from './testing.js';
import { realClock, type FailedDevice } from './types.js';

function manual(): Transport & { sink: TransportSink } {
  const t = {
    kind: 'file' as const,
    sink: undefined as unknown as TransportSink,
    start: (sink: TransportSink) => void (t.sink = sink),
    stop: () => Promise.resolve(),
    stats: () => ({}),
  };
  return t;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function get(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/' }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('drainOnFailure', () => {
  it('stops accepting, lets the request in flight finish, and resolves drained', async () => {
    let finishSlow: () => void = () => undefined;
    let slowArrived: () => void = () => undefined;
    const arrived = new Promise<void>((r) => (slowArrived = r));
    const server = createServer((_req, res) => {
      slowArrived();
      finishSlow = () => res.end('done');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => void server.closeAllConnections());
    const port = (server.address() as AddressInfo).port;
    const transport = manual();
    const follower = createFollower(transport, { node: 'n1', staleAfterMs: 10_000, clock: realClock });
    cleanups.push(() => follower.close());
    const drains: FailedDevice[][] = [];
    const handle = drainOnFailure(server, follower, { onDrain: (f) => drains.push(f) });

    transport.sink.document(document(new Date(), [nodeEntry('n2', [device('npu1', 'failed')])]));
    transport.sink.document(document(new Date(), [nodeEntry('n1', [device('npu1', 'degraded')])]));
    expect(handle.draining).toBe(false);
    const inFlight = get(port);
    await arrived;

    transport.sink.document(document(new Date(), [nodeEntry('n1', [device('npu4', 'failed')])]));
    expect(handle.draining).toBe(true);
    expect(drains.map((f) => f.map((d) => d.device.id))).toEqual([['npu4']]);
    await expect(get(port)).rejects.toThrow(/ECONNREFUSED/);
    finishSlow();
    expect(await inFlight).toEqual({ status: 200, body: 'done' });
    await handle.drained;
    expect(server.listening).toBe(false);
  });

  it('drains at once when the node already has a failed device, and never for a cluster follower', async () => {
    const servers = [createServer(), createServer()];
    for (const s of servers) await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const failed = document(new Date(), [nodeEntry('n1', [device('npu1', 'failed')])]);
    const [nodeT, clusterT] = [manual(), manual()];
    const nodeF = createFollower(nodeT, { node: 'n1', staleAfterMs: 10_000, clock: realClock });
    const clusterF = createFollower(clusterT, { node: null, staleAfterMs: 10_000, clock: realClock });
    cleanups.push(
      () => nodeF.close(),
      () => clusterF.close(),
      () => void servers[1]!.close(),
    );
    nodeT.sink.document(failed);
    clusterT.sink.document(failed);
    const onNode = drainOnFailure(servers[0]!, nodeF);
    const onCluster = drainOnFailure(servers[1]!, clusterF);
    expect(onNode.draining).toBe(true);
    await onNode.drained;
    expect(onCluster.draining).toBe(false);
    onCluster.cancel();
  });

  it('drains when the node counts a failed device that the byte budget did not list', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const listed = nodeEntry('n1', []);
    const entry = { ...listed, summary: { ...listed.summary, healthy: 7, failed: 1 }, omitted_devices: 1 };
    const t = manual();
    const follower = createFollower(t, { node: 'n1', staleAfterMs: 10_000, clock: realClock });
    cleanups.push(() => follower.close());
    t.sink.document(document(new Date(), [entry]));
    const drained: FailedDevice[][] = [];
    const handle = drainOnFailure(server, follower, { onDrain: (failed) => drained.push(failed) });
    expect(handle.draining).toBe(true);
    expect(drained).toEqual([[]]);
    await handle.drained;
  });
});
