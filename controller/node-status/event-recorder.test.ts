import { describe, expect, it } from '@jest/globals';
import { FakeClock, createLogger, createRegistry } from '../../platform/index.js';
import { createEventRecorder } from './event-recorder.js';
import { FakeEventClient } from './fake-clients.js';

const node = { apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'n1' };

function setup(options: { burst?: number; perMinute?: number } = {}) {
  const client = new FakeEventClient();
  const clock = new FakeClock(Date.parse('2026-12-01T00:00:00Z'));
  const registry = createRegistry('controller');
  const log = createLogger({ level: 'silent' });
  const recorder = createEventRecorder(
    { client, clock, log, registry },
    { component: 'npu-fault-controller', instance: 'c1', ...options },
  );
  const count = async (result: string): Promise<number> => {
    const metric = await registry.getSingleMetric('npu_fault_controller_events_total')?.get();
    return metric?.values.filter((v) => v.labels.result === result).reduce((a, v) => a + v.value, 0) ?? 0;
  };
  return { client, clock, recorder, count };
}

describe('event recorder', () => {
  it('writes a Node Event into default with its source', async () => {
    const { client, recorder } = setup();
    recorder.record(node, 'Warning', 'DeviceFailed', 'npu3 failed (ecc-uncorrectable)');
    await recorder.flush();
    const [event] = [...client.events.values()];
    expect(event).toMatchObject({
      namespace: 'default',
      involvedObject: node,
      type: 'Warning',
      reason: 'DeviceFailed',
      count: 1,
      reportingComponent: 'npu-fault-controller',
      reportingInstance: 'c1',
    });
  });

  it('aggregates the same Event into one with a count', async () => {
    const { client, recorder, clock, count } = setup();
    for (let i = 0; i < 3; i++) {
      recorder.record(node, 'Warning', 'DeviceFailed', 'npu3 failed');
      await clock.advance(1000);
    }
    await recorder.flush();
    expect(client.events.size).toBe(1);
    expect([...client.events.values()][0]?.count).toBe(3);
    expect(await count('aggregated')).toBe(2);
  });

  it('rate-limits per object and drops the excess, counted', async () => {
    const { client, recorder, count, clock } = setup({ burst: 3, perMinute: 1 });
    for (let i = 0; i < 10; i++) recorder.record(node, 'Warning', 'DeviceFailed', `npu${i} failed`);
    await recorder.flush();
    expect(client.events.size).toBe(3);
    expect(await count('dropped')).toBe(7);
    await clock.advance(60_000);
    recorder.record(node, 'Warning', 'DeviceFailed', 'npu20 failed');
    await recorder.flush();
    expect(client.events.size).toBe(4);
  });

  it('counts a failed write and goes on', async () => {
    const { client, recorder, count } = setup();
    client.fail = new Error('apiserver down');
    recorder.record(node, 'Normal', 'DeviceRecovered', 'npu3 healthy');
    await recorder.flush();
    client.fail = undefined;
    recorder.record(node, 'Normal', 'DeviceRecovered', 'npu4 healthy');
    await recorder.flush();
    expect(await count('error')).toBe(1);
    expect(client.events.size).toBe(1);
  });

  it('bounds its queue: what exceeds it is dropped and counted, never queued', async () => {
    const client = new FakeEventClient();
    const registry = createRegistry('controller');
    const recorder = createEventRecorder(
      { client, clock: new FakeClock(), log: createLogger({ level: 'silent' }), registry },
      { component: 'c', instance: 'i', maxQueued: 5, burst: 100 },
    );
    for (let i = 0; i < 20; i++) recorder.record({ ...node, name: `n${i}` }, 'Warning', 'DeviceUnknown', 'x');
    await recorder.flush();
    expect(client.events.size).toBe(5);
    const metric = await registry.getSingleMetric('npu_fault_controller_events_total')?.get();
    expect(metric?.values.find((v) => v.labels.result === 'dropped')?.value).toBe(15);
  });
});
