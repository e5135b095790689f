import { afterEach, describe, expect, it } from '@jest/globals';
import { Socket, createServer, type Server } from 'node:net';
import { FakeClock, systemClock } from '../../../platform/index.js';
import { createTcpConnector } from './connector.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A loopback listener; its port. `accepted` counts the connections it saw. */
async function listener(): Promise<{ port: number; accepted: () => number }> {
  let accepted = 0;
  server = createServer((socket) => {
    accepted++;
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { port: address.port, accepted: () => accepted };
}

describe('the TCP connector', () => {
  const connect = createTcpConnector(systemClock);

  it('connects to a listener and closes at once', async () => {
    const { port, accepted } = await listener();
    const result = await connect({ host: '127.0.0.1', port }, 2000, new AbortController().signal);
    expect(result).toEqual({ outcome: 'connected', error: null });
    const deadline = Date.now() + 2000;
    while (accepted() === 0 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    expect(accepted()).toBe(1);
  });

  it('counts a refused connection (an RST) as refused: the host answered', async () => {
    // A port that was just listened on and closed: nothing listens there now.
    const { port } = await listener();
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
    const result = await connect({ host: '127.0.0.1', port }, 2000, new AbortController().signal);
    expect(result).toEqual({ outcome: 'refused', error: 'ECONNREFUSED' });
  });

  it('gives up after the timeout on the injected clock, and destroys the socket', async () => {
    const clock = new FakeClock();
    const sockets: Socket[] = [];
    // A socket that never connects: a SYN nobody answers.
    const silent = createTcpConnector(clock, () => {
      const socket = new Socket();
      sockets.push(socket);
      return socket;
    });
    let settled = false;
    const attempt = silent({ host: '10.0.0.1', port: 53 }, 1500, new AbortController().signal).then((r) => {
      settled = true;
      return r;
    });
    await clock.advance(1499);
    expect(settled).toBe(false);
    await clock.advance(1);
    expect(await attempt).toEqual({ outcome: 'timeout', error: 'timeout after 1500 ms' });
    expect(sockets[0]?.destroyed).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it('stops when the signal aborts, and does not start when it already has', async () => {
    const clock = new FakeClock();
    let opened = 0;
    const silent = createTcpConnector(clock, () => {
      opened++;
      return new Socket();
    });
    const abort = new AbortController();
    const attempt = silent({ host: '10.0.0.1', port: 53 }, 1500, abort.signal);
    abort.abort();
    expect(await attempt).toEqual({ outcome: 'aborted', error: 'aborted' });
    expect(clock.pending).toBe(0);
    expect(await silent({ host: '10.0.0.1', port: 53 }, 1500, abort.signal)).toMatchObject({
      outcome: 'aborted',
    });
    expect(opened).toBe(1);
  });

  it('tells unreachable from other errors by the code', async () => {
    const failing = (code: string) =>
      createTcpConnector(systemClock, () => {
        const socket = new Socket();
        setImmediate(() => socket.destroy(Object.assign(new Error(`connect ${code}`), { code })));
        return socket;
      });
    const signal = new AbortController().signal;
    const endpoint = { host: '10.0.0.1', port: 53 };
    expect(await failing('ENETUNREACH')(endpoint, 1000, signal)).toEqual({
      outcome: 'unreachable',
      error: 'ENETUNREACH',
    });
    expect(await failing('EHOSTUNREACH')(endpoint, 1000, signal)).toEqual({
      outcome: 'unreachable',
      error: 'EHOSTUNREACH',
    });
    expect(await failing('ENETDOWN')(endpoint, 1000, signal)).toEqual({
      outcome: 'unreachable',
      error: 'ENETDOWN',
    });
    expect(await failing('ECONNRESET')(endpoint, 1000, signal)).toEqual({
      outcome: 'refused',
      error: 'ECONNRESET',
    });
    expect(await failing('EPERM')(endpoint, 1000, signal)).toEqual({ outcome: 'error', error: 'EPERM' });
  });
});
