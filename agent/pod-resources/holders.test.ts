import { describe, expect, it } from '@jest/globals';
import { snapshotSchema } from '../../contracts/index.js';
import { holdersFrom, resourceIdOf } from './holders.js';

const container = (name: string, devices: { resource_name: string; device_ids: string[] }[], dra = 0) => ({
  name,
  devices,
  dynamic_resources: dra === 0 ? [] : [{ claim_resources: Array.from({ length: dra }, () => ({})) }],
});
const pod = (namespace: string, name: string, containers: ReturnType<typeof container>[]) => ({
  namespace,
  name,
  containers,
});

describe('resourceIdOf', () => {
  it.each([
    ['huawei.com/Ascend910', 'Ascend910-3', 'Ascend910-3'],
    ['huawei.com/Ascend910-2c', 'Ascend910-2c-100-3', 'Ascend910-3'],
    ['huawei.com/Ascend310P', 'Ascend310P-0-99', 'Ascend310P-0'],
    ['nvidia.com/gpu', 'GPU-8e1c', 'GPU-8e1c'],
    ['nvidia.com/gpu', 'GPU-8e1c::2', 'GPU-8e1c'],
  ])('%s %s is %s', (resource, id, expected) => {
    expect(resourceIdOf(resource, id)).toBe(expected);
  });

  it.each([
    ['huawei.com/npu', 'npu-3', 'logical-id'],
    ['nvidia.com/mig-1g.10gb', 'MIG-1234', 'mig'],
    ['huawei.com/Ascend910', 'davinci3', 'unknown-id'],
    // The NVIDIA device plugin under --device-id-strategy=index: an index, not our uuid.
    ['nvidia.com/gpu', '0', 'unknown-id'],
    ['nvidia.com/gpu', '1::2', 'unknown-id'],
    // Resources the drain counts as accelerators (ACCELERATOR_RESOURCE_PREFIXES) that we cannot map.
    ['nvidia.com/gpu-a100', 'GPU-8e1c', 'unknown-resource'],
    ['nvidia.com/gpu.shared-a100', 'GPU-8e1c::1', 'unknown-resource'],
    ['huawei.com/npu-core', 'npu-3', 'unknown-resource'],
  ])('does not map %s %s (%s)', (resource, id, why) => {
    expect(resourceIdOf(resource, id)).toEqual({ unmapped: why });
  });

  it('ignores resources that are not accelerators', () => {
    expect(resourceIdOf('cpu', '3')).toBeNull();
    expect(resourceIdOf('rdma/hca', 'mlx5_0')).toBeNull();
    expect(resourceIdOf('example.com/fpga', '0')).toBeNull();
    expect(resourceIdOf('amd.com/gpu', '0')).toBeNull();
  });
});

describe('holdersFrom', () => {
  it('lists each device’s containers, sorted, once each', () => {
    const reading = holdersFrom({
      pod_resources: [
        pod('team-b', 'infer-0', [
          container('main', [
            { resource_name: 'huawei.com/Ascend910', device_ids: ['Ascend910-1', 'Ascend910-2'] },
            { resource_name: 'cpu', device_ids: ['4'] },
          ]),
          container('sidecar', [{ resource_name: 'nvidia.com/gpu', device_ids: ['GPU-8e1c-77aa::1'] }]),
        ]),
        pod('team-a', 'train-0', [
          container('main', [
            { resource_name: 'huawei.com/Ascend910-2c', device_ids: ['Ascend910-2c-100-1'] },
          ]),
        ]),
        pod('idle', 'web', [container('main', [])]),
      ],
    });
    expect(reading).toEqual({
      holders: [
        {
          resource_id: 'Ascend910-1',
          pods: [
            { namespace: 'team-a', name: 'train-0', container: 'main' },
            { namespace: 'team-b', name: 'infer-0', container: 'main' },
          ],
        },
        { resource_id: 'Ascend910-2', pods: [{ namespace: 'team-b', name: 'infer-0', container: 'main' }] },
        {
          resource_id: 'GPU-8e1c-77aa',
          pods: [{ namespace: 'team-b', name: 'infer-0', container: 'sidecar' }],
        },
      ],
      unmapped: { 'logical-id': 0, mig: 0, dra: 0, 'unknown-id': 0, 'unknown-resource': 0 },
    });
    // What it gives is what the contract takes.
    if ('refused' in reading) throw new Error(reading.error);
    expect(() =>
      snapshotSchema.parse({
        schema: 'hdc.health/v1',
        node: 'n',
        seq: 1,
        collected_at: '2026-01-01T00:00:00Z',
        collector: 'npu-smi',
        payload: { family: '910B', npus: [], device_holders: reading.holders },
      }),
    ).not.toThrow();
  });

  it.each([
    [
      'a MIG slice',
      container('main', [{ resource_name: 'nvidia.com/mig-1g.10gb', device_ids: ['MIG-9f2b'] }]),
      'mig',
    ],
    ['a DRA claim', container('main', [], 1), 'dra'],
    [
      'a GPU index',
      container('main', [{ resource_name: 'nvidia.com/gpu', device_ids: ['0'] }]),
      'unknown-id',
    ],
    [
      'a logical npu',
      container('main', [{ resource_name: 'huawei.com/npu', device_ids: ['npu-0'] }]),
      'logical-id',
    ],
    [
      'a renamed GPU resource',
      container('main', [{ resource_name: 'nvidia.com/gpu-a100', device_ids: ['GPU-8e1c'] }]),
      'unknown-resource',
    ],
  ] as const)(
    'gives no holders at all when one pod holds %s (the list would be incomplete)',
    (_, held, why) => {
      const reading = holdersFrom({
        pod_resources: [
          pod('team-a', 'train-0', [
            container('main', [{ resource_name: 'huawei.com/Ascend910', device_ids: ['Ascend910-1'] }]),
          ]),
          pod('team-b', 'other-0', [held]),
        ],
      });
      expect(reading).toMatchObject({ refused: 'incomplete', unmapped: { [why]: 1 } });
      expect('holders' in reading).toBe(false);
      if ('error' in reading) expect(reading.error).toContain(`${why}: 1`);
    },
  );

  it('says [] when the kubelet knows of no holder', () => {
    expect(holdersFrom({ pod_resources: [] })).toMatchObject({ holders: [] });
  });

  const onGpu = (count: number, gpus = 1, name = (i: number) => `p-${i}`) =>
    Array.from({ length: count }, (_, i) =>
      pod('ns', name(i), [
        container('main', [
          { resource_name: 'nvidia.com/gpu', device_ids: Array.from({ length: gpus }, (_, g) => `GPU-${g}`) },
        ]),
      ]),
    );

  it('takes 32 containers on a device, and refuses 33 whole rather than cut the list', () => {
    expect(holdersFrom({ pod_resources: onGpu(32) })).toMatchObject({
      holders: [{ pods: expect.any(Array) }],
    });
    expect(holdersFrom({ pod_resources: onGpu(33) })).toEqual({
      refused: 'over-bounds',
      error: 'GPU-0 held by 33 containers, more than 32',
    });
  });

  it('refuses holders that would take more than 64 KiB of the snapshot', () => {
    // 16 GPUs shared by 30 pods with long names: within the counts, not within the bytes.
    const reading = holdersFrom({ pod_resources: onGpu(30, 16, (i) => `${'x'.repeat(200)}-${i}`) });
    expect(reading).toMatchObject({
      refused: 'over-bounds',
      error: expect.stringMatching(/more than 65536$/),
    });
  });

  it.each([
    [{ pod_resources: [pod('Team_A', 'x', [])] }, 'ListPodResourcesResponse.pod_resources[0].namespace:'],
    [{ pod_resources: [pod('ns', '../etc', [])] }, 'ListPodResourcesResponse.pod_resources[0].name:'],
    [{ pod_resources: [pod('ns', 'x', [container('', [])])] }, 'pod_resources[0].containers[0].name:'],
    [{ pod_resources: 'garbage' }, 'ListPodResourcesResponse.pod_resources:'],
    [null, 'ListPodResourcesResponse:'],
  ])('refuses a bad answer as a whole, naming the field', (response, message) => {
    const reading = holdersFrom(response);
    expect('refused' in reading && reading.refused).toBe('invalid');
    expect('refused' in reading && reading.error).toContain(message);
  });
});
