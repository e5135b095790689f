import { summarisePod } from './pod-client.js';
import { describe, expect, it } from '@jest/globals';
import { drainConfigSchema } from './config.js';
import type { PublishedDevice, PublishedNode } from '../../contracts/index.js';
import {
  allocatedDevices,
  deviceVerdict,
  knownHolders,
  physicalDevice,
  requestsAccelerator,
} from './allocation.js';
import { fakePod } from './fake-pod-client.js';

const KEYS = ['huawei.com/AscendReal', ...drainConfigSchema.parse({}).allocationAnnotations];

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

describe('requestsAccelerator', () => {
  it.each([
    [['huawei.com/Ascend910'], true],
    [['huawei.com/Ascend910-2c'], true],
    [['huawei.com/Ascend310P'], true],
    [['huawei.com/npu'], true],
    [['nvidia.com/gpu'], true],
    [['nvidia.com/mig-1g.10gb'], true],
    [['nvidia.com/gpu-a100'], true],
    [['example.com/fpga', 'hugepages.example/x'], false],
    [[], false],
  ])('%j: %s', (deviceResources, expected) => {
    expect(requestsAccelerator(fakePod({ name: 'p', deviceResources }))).toBe(expected);
  });
});

describe('deviceVerdict', () => {
  const ASCEND = ['huawei.com/Ascend910'];
  const pod = (annotations: Record<string, string>, deviceResources = ASCEND) =>
    fakePod({ name: 'p', annotations, deviceResources });
  const verdict = (p: ReturnType<typeof pod>, devices = ['Ascend910-3'], keys = KEYS) =>
    deviceVerdict(p, devices, keys);

  it('evicts a pod asking for accelerators whose allocation names a failed device, under any configured key', () => {
    expect(verdict(pod({ 'huawei.com/Ascend910': 'Ascend910-3' }))).toBe('holder');
    expect(verdict(pod({ 'huawei.com/AscendReal': 'Ascend910-2,Ascend910-3' }))).toBe('holder');
    expect(
      verdict(pod({ 'huawei.com/Ascend910': 'Ascend910-0,Ascend910-1' }), ['Ascend910-1', 'Ascend910-5']),
    ).toBe('holder');
  });

  it('leaves a pod whose allocation names only other devices of that kind', () => {
    expect(verdict(pod({ 'huawei.com/Ascend910': 'Ascend910-0,Ascend910-1' }))).toBe('other-devices');
  });

  it('counts a virtual NPU as its physical device', () => {
    expect(verdict(pod({ 'huawei.com/AscendReal': 'Ascend910-2c-100-4' }), ['Ascend910-4'])).toBe('holder');
    expect(verdict(pod({ 'huawei.com/AscendReal': 'Ascend910-2c-100-4' }), ['Ascend910-2'])).toBe(
      'other-devices',
    );
  });

  it('never evicts a pod that asks for no accelerator, whatever its (tenant-written) annotations say', () => {
    expect(verdict(pod({}, []))).toBe('no-accelerator');
    expect(verdict(pod({ 'huawei.com/Ascend910': 'Ascend910-3' }, []))).toBe('no-accelerator');
    expect(verdict(pod({}, ['example.com/fpga']))).toBe('no-accelerator');
  });

  it('evicts a pod asking for accelerators whose allocation is missing, unreadable or of another kind (it may hold the device)', () => {
    expect(verdict(pod({}))).toBe('unknown');
    expect(verdict(pod({ 'huawei.com/Ascend910': ' , ,' }))).toBe('unknown');
    // `npu-<id>` names may be logical ids: not comparable with Ascend910-3.
    expect(verdict(pod({ 'huawei.com/npu': 'npu-0' }), ['Ascend910-0'], [...KEYS, 'huawei.com/npu'])).toBe(
      'unknown',
    );
    // Only the configured keys are read.
    expect(
      verdict(pod({ 'huawei.com/AscendReal': 'Ascend910-0' }), ['Ascend910-3'], ['huawei.com/Ascend910']),
    ).toBe('unknown');
  });

  it('counts a pod with DRA resource claims as one that may hold any device', () => {
    const claims = summarisePod({
      metadata: { name: 'dra', namespace: 'ml', uid: 'u' },
      spec: { containers: [{ name: 'a' }], resourceClaims: [{ name: 'gpu', resourceClaimName: 'c' }] },
    });
    expect(verdict(claims)).toBe('unknown');
  });

  it('evicts GPU pods on a GPU fault (no allocation annotation exists for them) and only them', () => {
    const uuid = 'GPU-8f6e1c2a-1111-2222-3333-444455556666';
    expect(verdict(pod({}, ['nvidia.com/gpu']), [uuid])).toBe('unknown');
    expect(verdict(pod({}, []), [uuid])).toBe('no-accelerator');
  });
});

describe('knownHolders', () => {
  const listed = (resource_id: string, pods?: string[]) =>
    ({ resource_id, ...(pods === undefined ? {} : { pods }) }) as unknown as PublishedDevice;
  const entry = (npus: PublishedDevice[]) => ({ npus }) as unknown as PublishedNode;

  it('takes the failed devices whose holders the entry lists, and no other device', () => {
    const holders = knownHolders(
      entry([listed('Ascend910-1', ['a/x']), listed('Ascend910-2'), listed('Ascend910-3', ['b/y'])]),
      ['Ascend910-1', 'Ascend910-2'],
    );
    expect([...holders]).toEqual([['Ascend910-1', ['a/x']]]);
  });

  it('is empty without an entry', () => {
    expect(knownHolders(undefined, ['Ascend910-1']).size).toBe(0);
    expect(knownHolders(null, ['Ascend910-1']).size).toBe(0);
  });
});
