/**
 * The periodic reader of the kubelet's PodResources (every periodMs, 5 s by default): each
 * snapshot carries the holders of the last read (`holders()`, never waiting on the socket), so
 * it never delays or fails a snapshot. A read that fails (socket absent, deadline, too large,
 * malformed, names that are not Kubernetes names, beyond the contract's bounds, or `incomplete`:
 * an accelerator allocation it cannot map to a device) makes the holders unknown until the next good
 * read: the snapshot then leaves `device_holders` out rather than send a list that may be old,
 * and a drain falls back to the pods' annotations. Counted on /metrics by result; logged once
 * per failing spell.
 */
import type { DeviceHolderReading } from '../../contracts/index.js';
import type { Clock, Logger, Registry, Runnable } from '../../platform/index.js';
import { PodResourcesError, type ListFailure, type PodResourcesClient } from './client.js';
import { UNMAPPED_KINDS, holdersFrom } from './holders.js';
import { readerMetrics } from './metrics.js';

/** A read's outcome (the reads metric's `result`). */
export type ReadResult = 'ok' | ListFailure | 'invalid' | 'over-bounds' | 'incomplete';

/** The reader: a Runnable with the holders of its last read. */
export interface PodResourcesReader extends Runnable {
  /** The holders of the last read; undefined when it failed or none ran yet. */
  holders(): DeviceHolderReading[] | undefined;
  /** One read now (the loop calls it; tests too). */
  read(signal?: AbortSignal): Promise<ReadResult>;
}

/** What the reader is given. */
export interface PodResourcesReaderDeps {
  client: PodResourcesClient;
  clock: Clock;
  log: Logger;
  registry: Registry;
}

/** Builds the reader; `periodMs` apart, each read bounded by the client's deadline. */
export function createPodResourcesReader(
  options: { readonly periodMs: number; readonly socket: string },
  deps: PodResourcesReaderDeps,
): PodResourcesReader {
  const { client, log } = deps;
  const metrics = readerMetrics(deps.registry);
  let holders: DeviceHolderReading[] | undefined;
  let failing: ReadResult | null = null;

  const record = (result: ReadResult, why?: string): ReadResult => {
    metrics.reads.inc({ result });
    metrics.known.set(result === 'ok' ? 1 : 0);
    if (result === 'ok') {
      if (failing !== null) log.info({ socket: options.socket }, 'pod resources read again');
      failing = null;
    } else {
      holders = undefined;
      if (failing === null)
        log.warn({ socket: options.socket, result, err: why }, 'pod resources unreadable');
      failing = result;
    }
    return result;
  };

  const read = async (signal?: AbortSignal): Promise<ReadResult> => {
    let answer: unknown;
    try {
      answer = await client.list(signal);
    } catch (error) {
      if (signal?.aborted) return 'error';
      if (error instanceof PodResourcesError) return record(error.result, error.message);
      return record('error', String((error as Error | null)?.message ?? error).split('\n')[0]);
    }
    const reading = holdersFrom(answer);
    if ('unmapped' in reading)
      for (const why of UNMAPPED_KINDS) metrics.unmapped.set({ why }, reading.unmapped[why]);
    if ('refused' in reading) return record(reading.refused, reading.error);
    holders = reading.holders;
    return record('ok');
  };

  return {
    name: 'pod-resources',
    holders: () => holders,
    read,
    async start(signal: AbortSignal): Promise<void> {
      log.info({ socket: options.socket, periodMs: options.periodMs }, 'pod resources reader on');
      try {
        while (!signal.aborted) {
          await read(signal);
          try {
            await deps.clock.sleep(options.periodMs, signal);
          } catch {
            return;
          }
        }
      } finally {
        client.close();
      }
    },
  };
}
