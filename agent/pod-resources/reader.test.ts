/**
 * The periodic reader against the fake kubelet on a unix socket: the last good read goes with
 * snapshots, a failed one makes the holders unknown (never old), each read counted by result.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { Registry } from 'prom-client';
import { FakeClock, createLogger } from '../../platform/index.js';
import { createPodResourcesClient } from './client.js';
import { createPodResourcesReader, type PodResourcesReader } from './reader.js';
import { containerWith, startFakePodResources, type FakeAnswer, type FakePodResources } from './testing.js';

const holding = (name: string, device: string): FakeAnswer => ({
  response: {
    pod_resources: [
      {
        name,
        namespace: 'team-a',
        containers: [containerWith('main', { 'huawei.com/Ascend910': [device] })],
      },
    ],
  },
});

const migBeside = (name: string, device: string): FakeAnswer => ({
  response: {
    pod_resources: [
      ...(holding(name, device) as { response: { pod_resources: unknown[] } }).response.pod_resources,
      {
        name: 'mig-0',
        namespace: 'team-b',
        containers: [containerWith('main', { 'nvidia.com/mig-1g.10gb': ['MIG-9f2b'] })],
      },
    ],
  },
});

describe('PodResources reader', () => {
  let fake: FakePodResources | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  async function reader(
    answers: FakeAnswer[],
  ): Promise<{ reader: PodResourcesReader; registry: Registry; clock: FakeClock }> {
    let i = 0;
    fake = await startFakePodResources(() => answers[Math.min(i++, answers.length - 1)] as FakeAnswer);
    const registry = new Registry();
    const clock = new FakeClock();
    const client = createPodResourcesClient({
      socket: fake.socket,
      timeoutMs: 300,
      maxMessageBytes: 1 << 20,
    });
    const built = createPodResourcesReader(
      { periodMs: 5000, socket: fake.socket },
      { client, clock, log: createLogger({ level: 'silent' }), registry },
    );
    return { reader: built, registry, clock };
  }

  const count = async (registry: Registry, result: string): Promise<number> => {
    const metric = await registry.getSingleMetric('npu_fault_agent_pod_resources_reads_total')?.get();
    return metric?.values.find((v) => v.labels.result === result)?.value ?? 0;
  };

  it('knows nothing before the first read, the holders after a good one, nothing after a failed one', async () => {
    const { reader: r, registry } = await reader([
      holding('train-0', 'Ascend910-1'),
      { status: grpc.status.UNAVAILABLE, details: 'kubelet restarting' },
      { hang: true },
      { response: { pod_resources: [{ name: 'Bad_Name', namespace: 'a', containers: [] }] } },
      holding('train-1', 'Ascend910-2'),
      migBeside('train-1', 'Ascend910-2'),
    ]);
    expect(r.holders()).toBeUndefined();
    expect(await r.read()).toBe('ok');
    expect(r.holders()).toEqual([
      { resource_id: 'Ascend910-1', pods: [{ namespace: 'team-a', name: 'train-0', container: 'main' }] },
    ]);
    expect(await r.read()).toBe('unavailable');
    expect(r.holders()).toBeUndefined();
    expect(await r.read()).toBe('timeout');
    expect(await r.read()).toBe('invalid');
    expect(r.holders()).toBeUndefined();
    expect(await r.read()).toBe('ok');
    expect(r.holders()?.[0]?.resource_id).toBe('Ascend910-2');
    // A MIG pod beside it: the list would be incomplete, so no holders at all.
    expect(await r.read()).toBe('incomplete');
    expect(r.holders()).toBeUndefined();
    const unmapped = await registry
      .getSingleMetric('npu_fault_agent_pod_resources_unmapped_allocations')
      ?.get();
    expect(unmapped?.values.find((v) => v.labels.why === 'mig')?.value).toBe(1);
    expect([
      await count(registry, 'ok'),
      await count(registry, 'unavailable'),
      await count(registry, 'invalid'),
      await count(registry, 'incomplete'),
    ]).toEqual([2, 1, 1, 1]);
  });

  it('reads every period until stopped, and closes its client', async () => {
    const { reader: r, clock } = await reader([holding('train-0', 'Ascend910-1')]);
    const stop = new AbortController();
    const running = r.start(stop.signal);
    const calls = async (n: number): Promise<void> => {
      // Each read is a real call on the socket: wait for it, bounded.
      const deadline = Date.now() + 3000;
      while ((fake?.calls() ?? 0) < n && Date.now() < deadline)
        await new Promise((res) => setTimeout(res, 10));
      expect(fake?.calls()).toBe(n);
      // Let the answer reach the reader.
      const settled = Date.now() + 3000;
      while (r.holders() === undefined && Date.now() < settled)
        await new Promise((res) => setTimeout(res, 10));
    };
    await calls(1);
    await clock.advance(4999);
    expect(fake?.calls()).toBe(1);
    await clock.advance(1);
    await calls(2);
    stop.abort();
    await running;
    expect(r.holders()?.[0]?.pods[0]?.name).toBe('train-0');
  });
});
