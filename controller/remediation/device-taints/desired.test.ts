import { describe, expect, it } from '@jest/globals';
import type { PublishedNode } from '../../../contracts/index.js';
import { parseRemediationConfig, type RemediationConfigInput } from '../config.js';
import {
  desiredDeviceTaints,
  identifiersOf,
  normalisePciAddress,
  ruleName,
  type DeviceTaintNode,
} from './desired.js';
import { parseResourceSlice, type ResourceSliceView } from './resource-slices.js';
import { nodeEntryWith as entry } from './testing.js';

const OWNER = 'ai-infra';
const UUID_A = 'GPU-6a1b2c3d-0000-1111-2222-333344445555';
const UUID_B = 'GPU-7a1b2c3d-0000-1111-2222-333344445555';

function slice(
  node: string,
  devices: Record<string, Record<string, string>>,
  options: { driver?: string; pool?: string; generation?: number; name?: string } = {},
): ResourceSliceView {
  const driver = options.driver ?? 'fake.npu-fault.io';
  const parsed = parseResourceSlice({
    metadata: { name: options.name ?? `${node}-${driver}` },
    spec: {
      driver,
      nodeName: node,
      pool: { name: options.pool ?? node, generation: options.generation ?? 1, resourceSliceCount: 1 },
      devices: Object.entries(devices).map(([name, attributes]) => ({
        name,
        attributes: Object.fromEntries(Object.entries(attributes).map(([k, v]) => [k, { string: v }])),
      })),
    },
  });
  if (!('slice' in parsed)) throw new Error(parsed.error);
  return parsed.slice;
}

const node = (
  name: string,
  e: PublishedNode | null | undefined,
  fields: Partial<DeviceTaintNode> = {},
): DeviceTaintNode => ({
  name,
  optedOut: false,
  maintenance: false,
  entry: e,
  ...fields,
});
const config = (input: RemediationConfigInput = {}) =>
  parseRemediationConfig({ mode: 'cordon', deviceTaints: { enabled: true }, ...input });

describe('device taints wanted', () => {
  const slices = [
    slice('n1', {
      gpu0: { 'resource.kubernetes.io/pciBusID': '0000:3b:00.0', uuid: UUID_A },
      gpu1: { 'resource.kubernetes.io/pciBusID': '0000:3c:00.0', uuid: UUID_B },
    }),
  ];

  it('select exactly the failed device by UUID (NVIDIA) or PCI address (Ascend), with the configured taint', () => {
    const byUuid = desiredDeviceTaints(
      [node('n1', entry('n1', [{ key: UUID_B, resource_id: UUID_B }]))],
      slices,
      config(),
      OWNER,
    );
    expect(byUuid.rules).toEqual([
      {
        name: ruleName(OWNER, 'n1', 'fake.npu-fault.io', 'n1', 'gpu1'),
        node: 'n1',
        deviceKey: UUID_B,
        driver: 'fake.npu-fault.io',
        pool: 'n1',
        device: 'gpu1',
        taint: { key: 'npu-fault.io/device-failed', value: 'failed', effect: 'NoSchedule' },
      },
    ]);
    // nvidia-smi's 8-digit domain and upper case are the same address as the attribute's.
    const byPci = desiredDeviceTaints(
      [node('n1', entry('n1', [{ key: '00000000:3B:00.0', resource_id: 'Ascend910-0' }]))],
      slices,
      config({
        mode: 'drain',
        deviceTaints: { enabled: true, effect: 'NoExecute', taintKey: 'example.com/bad' },
      }),
      OWNER,
    );
    expect(byPci.rules.map((r) => [r.device, r.taint])).toEqual([
      ['gpu0', { key: 'example.com/bad', value: 'failed', effect: 'NoExecute' }],
    ]);
  });

  it('never guess: no identifier, no such device, or two devices are reported, not tainted', () => {
    const twice = [
      ...slices,
      slice(
        'n1',
        { other: { 'fake.npu-fault.io/pcieBusID': '0000:3b:00.0' } },
        { driver: 'other.example.com', pool: 'p' },
      ),
    ];
    const result = desiredDeviceTaints(
      [
        node(
          'n1',
          entry('n1', [
            { key: '0000:3b:00.0/1', resource_id: 'Ascend310P-4' }, // a chip of a card: no PCI function of its own
            { key: UUID_A.replace('6a', '9f'), resource_id: UUID_A.replace('6a', '9f') },
          ]),
        ),
      ],
      twice,
      config(),
      OWNER,
    );
    expect(result.rules).toEqual([]);
    expect(result.unmatched.map((u) => u.why)).toEqual(['no-identifier', 'no-device']);
    const ambiguous = [
      ...slices,
      slice(
        'n1',
        { other: { 'resource.kubernetes.io/pciBusID': '0000:3b:00.0' } },
        { driver: 'other.example.com', pool: 'p' },
      ),
    ];
    expect(
      desiredDeviceTaints(
        [node('n1', entry('n1', [{ key: '0000:3b:00.0', resource_id: 'x' }]))],
        ambiguous,
        config(),
        OWNER,
      ).unmatched,
    ).toEqual([{ node: 'n1', deviceKey: '0000:3b:00.0', why: 'ambiguous' }]);
  });

  it('refuse a device whose pool another node publishes under the same device name: the rule would select both', () => {
    const shared = { driver: 'fake.npu-fault.io', pool: 'shared-pool' };
    const mine = slice('n1', { gpu0: { uuid: UUID_A } }, { ...shared, name: 'n1-slice' });
    const theirs = slice('n2', { gpu0: { uuid: UUID_B } }, { ...shared, name: 'n2-slice' });
    const failed = [node('n1', entry('n1', [{ key: UUID_A, resource_id: UUID_A }]))];
    expect(desiredDeviceTaints(failed, [mine, theirs], config(), OWNER)).toMatchObject({
      rules: [],
      unmatched: [{ node: 'n1', deviceKey: UUID_A, why: 'ambiguous' }],
    });
    // Another device name in the shared pool selects one device: tainted.
    const distinct = slice('n2', { gpu9: { uuid: UUID_B } }, { ...shared, name: 'n2-slice' });
    expect(desiredDeviceTaints(failed, [mine, distinct], config(), OWNER).rules.map((r) => r.device)).toEqual(
      ['gpu0'],
    );
  });

  it('match the older MIG-GPU-<uuid>/<gi>/<ci> form as a UUID', () => {
    const mig = 'MIG-GPU-6a1b2c3d-0000-1111-2222-333344445555/1/0';
    const result = desiredDeviceTaints(
      [node('n1', entry('n1', [{ key: mig, resource_id: mig }]))],
      [slice('n1', { 'gpu0-mig-1-0': { uuid: mig } })],
      config(),
      OWNER,
    );
    expect(result.rules.map((r) => r.device)).toEqual(['gpu0-mig-1-0']);
  });

  it("keep the node's rules while its pool is republished and the device is only in an older generation", () => {
    const stale = slice('n1', { gpu0: { uuid: UUID_A } }, { generation: 1, name: 'old' });
    const fresh = slice('n1', { gpu1: { uuid: UUID_B } }, { generation: 2, name: 'new' });
    const failed = [node('n1', entry('n1', [{ key: UUID_A, resource_id: UUID_A }]))];
    const midway = desiredDeviceTaints(failed, [stale, fresh], config(), OWNER);
    expect(midway.rules).toEqual([]);
    expect(midway.unmatched.map((u) => u.why)).toEqual(['no-device']);
    expect([...midway.keep]).toEqual(['n1']);
    // Gone from every generation: no longer kept, its rule may go.
    expect([...desiredDeviceTaints(failed, [fresh], config(), OWNER).keep]).toEqual([]);
  });

  it('read only the newest generation of a pool, and only slices of the node', () => {
    const stale = slice('n1', { old0: { uuid: UUID_A } }, { generation: 1, name: 'old' });
    const fresh = slice('n1', { new0: { uuid: UUID_A } }, { generation: 2, name: 'new' });
    const elsewhere = slice('n2', { n2gpu: { uuid: UUID_A } });
    const result = desiredDeviceTaints(
      [node('n1', entry('n1', [{ key: UUID_A, resource_id: UUID_A }]))],
      [stale, fresh, elsewhere],
      config(),
      OWNER,
    );
    expect(result.rules.map((r) => r.device)).toEqual(['new0']);
  });

  it('keep the rules of unobserved and maintenance nodes, drop those of opted-out and healthy ones', () => {
    const failed = entry('n1', [{ key: UUID_A, resource_id: UUID_A }]);
    const result = desiredDeviceTaints(
      [
        node('unseen', undefined),
        node('planned', failed, { maintenance: true }),
        node('out', failed, { optedOut: true }),
        node('healthy', null),
        node('no-dra', entry('no-dra', [{ key: UUID_A, resource_id: UUID_A }])),
      ],
      slices,
      config(),
      OWNER,
    );
    expect(result.rules).toEqual([]);
    expect([...result.keep].sort()).toEqual(['planned', 'unseen']);
    // A node without ResourceSlices is not a DRA node: nothing to report.
    expect(result.unmatched).toEqual([]);
  });

  it('follow the trigger: degraded devices only when the trigger counts them', () => {
    const degraded = [node('n1', entry('n1', [{ key: UUID_A, resource_id: UUID_A, status: 'degraded' }]))];
    expect(desiredDeviceTaints(degraded, slices, config(), OWNER).rules).toEqual([]);
    expect(
      desiredDeviceTaints(
        degraded,
        slices,
        config({ trigger: { statuses: ['failed', 'degraded'] } }),
        OWNER,
      ).rules.map((r) => r.taint.value),
    ).toEqual(['degraded']);
  });
});

describe('device identifiers', () => {
  it('spell PCI addresses one way and refuse what is not one', () => {
    expect(normalisePciAddress('00000000:3B:00.0')).toBe('0000:3b:00.0');
    expect(normalisePciAddress('3b:00.1')).toBe('0000:3b:00.1');
    expect(normalisePciAddress('0001:3b:00.0')).toBe('0001:3b:00.0');
    for (const bad of ['0000:3b:00.8', '0000:3b:00', 'Ascend910-3', '0000:3b:00.0/1', ''])
      expect(normalisePciAddress(bad)).toBeUndefined();
    expect(identifiersOf({ key: UUID_A, resource_id: UUID_A })).toEqual({ uuid: UUID_A.toLowerCase() });
    expect(identifiersOf({ key: '0000:3b:00.0', resource_id: 'Ascend910-3' })).toEqual({
      pci: '0000:3b:00.0',
    });
  });

  it('name rules as DNS subdomains, the same for the same device, apart for different ones', () => {
    const name = ruleName(OWNER, 'Node_A.example', 'fake.npu-fault.io', 'pool', 'gpu-0');
    expect(name).toMatch(/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/);
    expect(name.length).toBeLessThanOrEqual(253);
    expect(ruleName(OWNER, 'Node_A.example', 'fake.npu-fault.io', 'pool', 'gpu-0')).toBe(name);
    expect(ruleName(OWNER, 'node-a.example', 'fake.npu-fault.io', 'pool', 'gpu-0')).not.toBe(name);
    expect(ruleName(OWNER, 'x'.repeat(253), 'd', 'p', 'y'.repeat(63)).length).toBeLessThanOrEqual(253);
    // A second install (another namespace) names the same device apart: no 409 on its create.
    expect(ruleName('ai-infra-2', 'Node_A.example', 'fake.npu-fault.io', 'pool', 'gpu-0')).not.toBe(name);
  });
});

describe('ResourceSlices from the API', () => {
  it('are refused whole, with one line naming the field, when not what the API promises', () => {
    expect(
      parseResourceSlice({ metadata: { name: 's1' }, spec: { driver: 'd', pool: { name: 'p' } } }),
    ).toEqual({
      error: expect.stringMatching(/^ResourceSlice s1: spec\.pool\.generation: /) as unknown as string,
    });
    expect(parseResourceSlice(null)).toEqual({
      error: expect.stringMatching(/^ResourceSlice \?: /) as unknown as string,
    });
  });

  it('qualify unqualified attributes with the driver and keep only string values', () => {
    const parsed = parseResourceSlice({
      metadata: { name: 's' },
      spec: {
        driver: 'gpu.nvidia.com',
        pool: { name: 'p', generation: 3 },
        nodeName: 'n',
        devices: [{ name: 'gpu-0', attributes: { uuid: { string: UUID_A }, index: { int: 0 } } }],
      },
    });
    expect('slice' in parsed && [...(parsed.slice.devices[0]?.attributes ?? [])]).toEqual([
      ['gpu.nvidia.com/uuid', UUID_A],
    ]);
  });
});
