/** A benchmark server on a free loopback port. */
import type { Server } from 'node:http';

/** Listens on 127.0.0.1 at a port the kernel picks; resolves with it (`what` names the server in errors). */
export async function listenOnLoopback(server: Server, what: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error(`${what}: no TCP address`);
  return address.port;
}
