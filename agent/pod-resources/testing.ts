/**
 * A fake kubelet PodResources server for tests: the real proto, served by @grpc/grpc-js on a
 * unix socket in a temporary directory. Each `List` gets what `answer()` says now: a response,
 * raw bytes (garbage, to see the client refuse them), a gRPC error, or no answer at all (hang).
 */
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PODRESOURCES_SERVICE } from './grpc-channel.js';

/** What the fake answers one List with. */
export type FakeAnswer =
  | { readonly response: unknown }
  | { readonly raw: Buffer }
  | { readonly status: grpc.status; readonly details: string }
  | { readonly hang: true };

/** A running fake. */
export interface FakePodResources {
  /** The socket's path. */
  readonly socket: string;
  /** List calls received. */
  calls(): number;
  /** Stops serving (hanging calls are cut) and removes the directory. */
  close(): Promise<void>;
}

/** One container's devices, for building answers. */
export function containerWith(
  name: string,
  devices: Record<string, string[]>,
): { name: string; devices: { resource_name: string; device_ids: string[] }[] } {
  return {
    name,
    devices: Object.entries(devices).map(([resource_name, device_ids]) => ({ resource_name, device_ids })),
  };
}

/** Starts a fake on a fresh socket; `answer` is asked at each call. */
export async function startFakePodResources(answer: () => FakeAnswer): Promise<FakePodResources> {
  const dir = mkdtempSync(join(tmpdir(), 'pod-resources-'));
  const socket = join(dir, 'kubelet.sock');
  const list = PODRESOURCES_SERVICE.List as grpc.MethodDefinition<unknown, unknown>;
  const raw = new WeakSet<object>();
  const service: grpc.ServiceDefinition = {
    ...PODRESOURCES_SERVICE,
    List: {
      ...list,
      // Raw bytes go out as they are, so a test can send what no kubelet would.
      responseSerialize: (value: unknown) =>
        typeof value === 'object' && value !== null && raw.has(value)
          ? (value as Buffer)
          : list.responseSerialize(value),
    },
  };
  const server = new grpc.Server();
  let calls = 0;
  server.addService(service, {
    List: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => {
      calls++;
      const next = answer();
      if ('hang' in next) return;
      if ('status' in next) callback({ code: next.status, details: next.details } as grpc.ServiceError, null);
      else if ('raw' in next) {
        raw.add(next.raw);
        callback(null, next.raw);
      } else callback(null, next.response);
    },
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (error) =>
      error ? reject(error) : resolve(),
    ),
  );
  return {
    socket,
    calls: () => calls,
    close: async () => {
      server.forceShutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
