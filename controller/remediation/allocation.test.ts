import { describe, expect, it } from '@jest/globals';
import { drainConfigSchema } from './config.js';
import { allocatedDevices, physicalDevice, podsHoldingDevices } from './allocation.js';
import { fakePod } from './fake-pod-client.js';

const KEYS = ['huawei.com/AscendReal', ...drainConfigSchema.parse({}).allocationAnnotations];
const names = (pods: { name: string }[]): string[] => pods.map((pod) => pod.name);

describe('physicalDevice', () => {
  it.each([
    ['Ascend910-3', 'Ascend910-3'],
    [' Ascend310P-1 ', 'Ascend310P-1'],
    ['Ascend910-2c-100-3', 'Ascend910-3'],
    ['Ascend310P-4c.3cpu-100-0', 'Ascend310P-0'],
    ['Ascend310P-1c-400-3_0', 'Ascend310P-3'],
    ['Ascend310P-0-99', 'Ascend310P-0'],
    ['npu-5', 'npu-5'],
    ['GPU-8f6e1c2a-1111-2222-3333-444455556666', 'GPU-8f6e1c2a-1111-2222-3333-444455556666'],
  ])('%s is %s', (name, physical) => {
    expect(physicalDevice(name)).toBe(physical);
  });
});

describe('allocatedDevices', () => {
  it('reads every listed annotation, comma-separated, deduplicated', () => {
    const pod = fakePod({
      name: 'p',
      annotations: {
        'huawei.com/AscendReal': 'Ascend910-0,Ascend910-1',
        'huawei.com/Ascend910': 'Ascend910-1, Ascend910-2,',
        'huawei.com/kltDev': 'Ascend910-7',
      },
    });
    expect(allocatedDevices(pod, KEYS).sort()).toEqual(['Ascend910-0', 'Ascend910-1', 'Ascend910-2']);
    expect(allocatedDevices(pod, ['other'])).toEqual([]);
  });
});

describe('podsHoldingDevices', () => {
  const a = fakePod({ name: 'a', annotations: { 'huawei.com/Ascend910': 'Ascend910-0,Ascend910-1' } });
  const b = fakePod({ name: 'b', annotations: { 'huawei.com/AscendReal': 'Ascend910-2,Ascend910-3' } });
  const c = fakePod({ name: 'c', annotations: { 'huawei.com/Ascend910': 'Ascend910-3' } });
  const web = fakePod({ name: 'web' });

  it('finds the pods holding any of the failed devices among several', () => {
    expect(podsHoldingDevices([a, b, c, web], ['Ascend910-3'], KEYS)).toEqual({ known: true, pods: [b, c] });
    expect(names(podsHoldingDevices([a, b, c, web], ['Ascend910-1', 'Ascend910-2'], KEYS).pods)).toEqual([
      'a',
      'b',
    ]);
  });

  it('is known with no holder when readable allocations name other devices', () => {
    expect(podsHoldingDevices([a, web], ['Ascend910-5'], KEYS)).toEqual({ known: true, pods: [] });
  });

  it('counts a virtual NPU as its physical device', () => {
    const v = fakePod({ name: 'v', annotations: { 'huawei.com/AscendReal': 'Ascend910-2c-100-4' } });
    expect(names(podsHoldingDevices([v], ['Ascend910-4'], KEYS).pods)).toEqual(['v']);
  });

  it('is unknown when no pod carries an allocation', () => {
    expect(podsHoldingDevices([web, fakePod({ name: 'x' })], ['Ascend910-3'], KEYS)).toEqual({
      known: false,
      pods: [],
    });
  });

  it('is unknown when a pod asks for such devices without saying which', () => {
    const silent = fakePod({ name: 's', deviceResources: ['huawei.com/Ascend910'] });
    expect(podsHoldingDevices([a, b, silent], ['Ascend910-3'], KEYS).known).toBe(false);
    // A finished pod holds nothing any more.
    expect(podsHoldingDevices([a, b, { ...silent, phase: 'Succeeded' }], ['Ascend910-3'], KEYS).known).toBe(
      true,
    );
    // Another kind of device says nothing about this one.
    const gpu = fakePod({ name: 'g', deviceResources: ['nvidia.com/gpu'] });
    expect(podsHoldingDevices([a, gpu], ['Ascend910-3'], KEYS).known).toBe(true);
  });

  it('is unknown when the allocations name devices of another kind (npu-<id>, not comparable)', () => {
    const generic = fakePod({ name: 'n', annotations: { 'huawei.com/npu': 'npu-0,npu-1' } });
    expect(podsHoldingDevices([generic], ['Ascend910-0'], KEYS).known).toBe(false);
  });

  it('is unknown for GPUs (no allocation annotation exists) and without devices', () => {
    expect(podsHoldingDevices([a, web], ['GPU-8f6e1c2a-1111-2222-3333-444455556666'], KEYS).known).toBe(
      false,
    );
    expect(podsHoldingDevices([a, web], [], KEYS).known).toBe(false);
  });

  it('reads only the configured keys', () => {
    expect(podsHoldingDevices([a, b], ['Ascend910-3'], ['huawei.com/Ascend910'])).toEqual({
      known: true,
      pods: [],
    });
  });
});
