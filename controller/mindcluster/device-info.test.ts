import { describe, expect, it } from '@jest/globals';
import { snapshotSchema, type Snapshot } from '../../contracts/index.js';
import { describeWithRealFixtures, readRealFixture } from '../../test/fixtures.js';
import { deviceInfoCheckCode, goJsonString } from './go-json.js';
import { parseDeviceInfo, type MindClusterView } from './device-info.js';
import { healthOf, mergeNodeProblems, mergeView, snapshotOf } from './snapshot.js';
import { ascend910List, deviceInfoCfg } from './testing.js';

const viewOf = (data: Record<string, string>): MindClusterView => {
  const result = parseDeviceInfo('node-a', data);
  if (!('view' in result)) throw new Error(result.message);
  return result.view;
};
const stamp = { bootId: 'mindcluster:uid-1', seq: 0, now: Date.parse('2026-12-03T10:00:00Z') };
/** An agent's snapshot of node-a with `payload` (validated). */
const agentSnapshot = (collector: string, payload: Record<string, unknown>): Snapshot =>
  snapshotSchema.parse({
    schema: 'hdc.health/v1',
    node: 'node-a',
    boot_id: 'b',
    seq: 1,
    collected_at: '2026-12-03T10:00:00Z',
    collector,
    payload,
  });
const npusOf = (s: Snapshot) => (s.payload.family === '910B' ? s.payload.npus : []);

describe('Go-compatible JSON (the CheckCode)', () => {
  it('escapes as encoding/json does', () => {
    expect(goJsonString('a<b>&"\\\n\t\u0001\u2028é')).toBe(
      '"a\\u003cb\\u003e\\u0026\\"\\\\\\n\\t\\u0001\\u2028é"',
    );
    expect(goJsonString('\ud800x')).toBe('"\ufffdx"');
  });
  it('hashes map keys in sorted order whatever the order written', () => {
    expect(deviceInfoCheckCode({ b: '1', a: '2' }, 5)).toBe(deviceInfoCheckCode({ a: '2', b: '1' }, 5));
    expect(deviceInfoCheckCode({ a: '1' }, 5)).not.toBe(deviceInfoCheckCode({ a: '1' }, 6));
  });
});

describe('parseDeviceInfo (in-repo sample)', () => {
  const list = ascend910List(8, {
    4: { level: 'SeparateNPU', codes: ['80E18402'], list: 'Unhealthy' },
    0: { level: 'PreSeparateNPU', codes: ['81078603'], list: 'NetworkUnhealthy' },
  });
  it('reads devices, lists and faults of a valid ConfigMap', () => {
    const view = viewOf({ DeviceInfoCfg: deviceInfoCfg(list) });
    expect(view.resource).toBe('Ascend910');
    expect(view.devices.map((d) => d.name)).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => `Ascend910-${i}`));
    expect(view.devices[4]).toMatchObject({
      lists: ['unhealthy'],
      faults: [{ level: 'SeparateNPU', codes: ['80E18402'] }],
    });
    expect(view.devices.map(healthOf)).toEqual(['Warning', 'OK', 'OK', 'OK', 'Critical', 'OK', 'OK', 'OK']);
  });
  it('ManuallySeparateNPU (its own data key) makes the device Critical', () => {
    const view = viewOf({
      DeviceInfoCfg: deviceInfoCfg(ascend910List(2)),
      ManuallySeparateNPU: 'Ascend910-1',
    });
    expect(view.devices.map(healthOf)).toEqual(['OK', 'Critical']);
  });
  it.each([
    [
      'a wrong CheckCode',
      { DeviceInfoCfg: deviceInfoCfg(list, { checkCode: 'ab'.repeat(32) }) },
      'integrity',
      'CheckCode',
    ],
    [
      'no CheckCode',
      { DeviceInfoCfg: JSON.stringify({ DeviceInfo: { DeviceList: {}, UpdateTime: 1 } }) },
      'integrity',
      'CheckCode',
    ],
    ['not JSON', { DeviceInfoCfg: '{"DeviceInfo":' }, 'json', 'DeviceInfoCfg'],
    ['no data key', {}, 'shape', 'DeviceInfoCfg: missing'],
    [
      'a number in DeviceList',
      { DeviceInfoCfg: '{"DeviceInfo":{"DeviceList":{"x":1},"UpdateTime":1},"CheckCode":"a"}' },
      'shape',
      'DeviceList.x',
    ],
    ['oversize', { DeviceInfoCfg: ' '.repeat(1024 * 1024 + 1) }, 'oversize', 'bytes'],
    [
      'a bad device name',
      { DeviceInfoCfg: deviceInfoCfg({ 'huawei.com/Ascend910': 'Ascend910-x' }) },
      'shape',
      'Ascend910-x',
    ],
    [
      'a bad fault code',
      {
        DeviceInfoCfg: deviceInfoCfg(
          ascend910List(1, { 0: { level: 'SeparateNPU', codes: ['zz'], list: null } }),
        ),
      },
      'shape',
      'fault_code',
    ],
    [
      'a Fault list that is not JSON',
      { DeviceInfoCfg: deviceInfoCfg({ 'huawei.com/Ascend910-Fault': '[{' }) },
      'json',
      'Ascend910-Fault',
    ],
  ])('refuses %s with a one-line reason naming the field', (_name, data, reason, field) => {
    const result = parseDeviceInfo('node-a', data as Record<string, string>);
    expect(result).toMatchObject({ refused: reason });
    if ('message' in result) {
      expect(result.message).toContain(field);
      expect(result.message).not.toContain('\n');
    }
  });
});

describe('snapshotOf and mergeView', () => {
  const view = viewOf({
    DeviceInfoCfg: deviceInfoCfg(
      ascend910List(2, { 1: { level: 'SeparateNPU', codes: ['80E18402', 'A8028801'], list: 'Unhealthy' } }),
    ),
  });
  it('makes a valid 910B snapshot whose readings are null, never invented', () => {
    const snapshot = snapshotOf(view, stamp);
    expect(snapshotSchema.safeParse(snapshot).success).toBe(true);
    expect(snapshot).toMatchObject({
      collector: 'mindcluster',
      boot_id: 'mindcluster:uid-1',
      node: 'node-a',
    });
    expect(npusOf(snapshot)[1]).toMatchObject({
      npu: 1,
      phy_id: 1,
      health: 'Critical',
      error_codes: ['80E18402', 'A8028801'],
      temp_c: null,
      power_w: null,
    });
    expect(npusOf(snapshot)[1]?.hbm.ecc.double_bit).toBeNull();
  });
  it('merges codes and the worse health into the matching agent device only', () => {
    const agent = agentSnapshot('hdc', {
      family: '910B',
      npus: [
        { npu: 0, phy_id: 0, health: 'Warning', error_codes: ['80E00209'] },
        { npu: 1, phy_id: 1, health: 'OK', error_codes: ['80E18402'] },
      ],
    });
    const merged = npusOf(mergeView(agent, view));
    expect(merged[0]).toMatchObject({ health: 'Warning', error_codes: ['80E00209'] }); // the agent's fault stays
    expect(merged[1]).toMatchObject({ health: 'Critical', error_codes: ['80E18402', 'A8028801'] });
    expect(mergeView(agent, undefined)).toBe(agent);
  });
  it("adds NodeD's node problem to a synthetic snapshot, valid under the contract", () => {
    const problem = {
      reason: 'host-hardware-fault',
      message: 'NodeD: node UnHealthy; CPU 1 00000011 (SeparateFault)',
    };
    const snapshot = snapshotOf(view, stamp, [problem]);
    expect(snapshotSchema.safeParse(snapshot).success).toBe(true);
    expect(snapshot.payload.node_problems).toEqual([problem]);
    expect(snapshotOf(view, stamp).payload.node_problems).toBeUndefined();
  });
  it("merges NodeD's node problem into any agent snapshot, keeping the agent's own, within the contract's bound", () => {
    const agent = agentSnapshot('nvidia-smi', {
      family: 'nvidia',
      gpus: [],
      node_problems: [{ reason: 'nic-link-down', message: 'eth2 carrier down' }],
    });
    const fault = { reason: 'host-hardware-fault', message: 'NodeD: node UnHealthy' };
    const merged = mergeNodeProblems(agent, [fault]);
    expect(merged.payload.node_problems?.map((p) => p.reason).sort()).toEqual([
      'host-hardware-fault',
      'nic-link-down',
    ]);
    expect(snapshotSchema.safeParse(merged).success).toBe(true);
    expect(agent.payload.node_problems).toHaveLength(1); // not mutated
    expect(mergeNodeProblems(agent, [])).toBe(agent);
    // A reason the snapshot carries already keeps the snapshot's message.
    expect(mergeNodeProblems(merged, [{ ...fault, message: 'other' }])).toBe(merged);
    const full = {
      ...agent,
      payload: {
        ...agent.payload,
        node_problems: Array.from({ length: 32 }, (_, i) => ({ reason: `r-${i}`, message: '' })),
      },
    };
    const cut = mergeNodeProblems(full as typeof agent, [fault]);
    expect(cut.payload.node_problems).toHaveLength(32);
    expect(cut.payload.node_problems?.[0]).toEqual(fault);
  });
});

describeWithRealFixtures('MindCluster device-info (real samples)', () => {
  it('mindx-deviceinfo-1.json passes the integrity check; Ascend910-4 Critical, Ascend910-0 Warning', () => {
    const view = viewOf({ DeviceInfoCfg: readRealFixture('mindx-deviceinfo-1.json') });
    const health = Object.fromEntries(view.devices.map((d) => [d.name, healthOf(d)]));
    expect(health).toEqual({
      'Ascend910-0': 'Warning',
      'Ascend910-1': 'OK',
      'Ascend910-2': 'OK',
      'Ascend910-3': 'OK',
      'Ascend910-4': 'Critical',
      'Ascend910-5': 'OK',
      'Ascend910-6': 'OK',
      'Ascend910-7': 'OK',
    });
    expect(view.devices[4]?.faults[0]?.codes).toEqual(['80E18401', '80E18402', 'A4028801', 'A8028801']);
  });
  it('the same text with its keys in another order still passes (the hash is of Go JSON, not of the bytes)', () => {
    const cfg = JSON.parse(readRealFixture('mindx-deviceinfo-1.json')) as {
      DeviceInfo: { DeviceList: Record<string, string> };
    };
    const reversed = Object.fromEntries(Object.entries(cfg.DeviceInfo.DeviceList).reverse());
    const text = JSON.stringify({ ...cfg, DeviceInfo: { UpdateTime: 1744182144, DeviceList: reversed } });
    expect('view' in parseDeviceInfo('n', { DeviceInfoCfg: text })).toBe(true);
  });
  it('mindx-deviceinfo-2.json (a hand-edited docs example) fails it', () => {
    expect(parseDeviceInfo('n', { DeviceInfoCfg: readRealFixture('mindx-deviceinfo-2.json') })).toMatchObject(
      { refused: 'integrity' },
    );
  });
});

describe('310P and the edges', () => {
  const list310 = {
    'huawei.com/Ascend310P': 'Ascend310P-0,Ascend310P-2',
    'huawei.com/Ascend310P-Unhealthy': 'Ascend310P-1',
    'huawei.com/Ascend310P-Fault': JSON.stringify([
      {
        npu_name: 'Ascend310P-1',
        fault_level: 'RestartNPU',
        fault_handling: 'SeparateNPU',
        fault_code: '80e01801',
      },
      {
        npu_name: 'Ascend310P-2',
        fault_level: 'SubHealthFault',
        fault_handling: 'SubHealthFault',
        fault_code: '',
      },
    ]),
  };
  it('reads a 310P node into a 310P snapshot (one card per chip, Ascend310P-<n> resource ids)', () => {
    const view = viewOf({ DeviceInfoCfg: deviceInfoCfg(list310) });
    expect(view.resource).toBe('Ascend310P');
    const snapshot = snapshotOf(view, stamp);
    expect(snapshot.payload.family).toBe('310P');
    const chips = snapshot.payload.family === '310P' ? snapshot.payload.cards.flatMap((c) => c.chips) : [];
    expect(chips.map((c) => [c.device_id, c.health, c.error_codes])).toEqual([
      [0, 'OK', []],
      [1, 'Critical', ['80E01801']], // the worst of the entry's levels: fault_handling SeparateNPU
      [2, 'Warning', []],
    ]);
  });
  it('an unknown level reads as a warning, never as healthy', () => {
    const view = viewOf({
      DeviceInfoCfg: deviceInfoCfg({
        'huawei.com/Ascend910-Fault': JSON.stringify([
          { npu_name: 'Ascend910-3', fault_level: 'SomethingNew' },
        ]),
      }),
    });
    expect(view.devices.map((d) => [d.name, healthOf(d)])).toEqual([['Ascend910-3', 'Warning']]);
  });
  it('refuses a ConfigMap whose name does not end in a node name', () => {
    expect(parseDeviceInfo('Not_A_Node', { DeviceInfoCfg: deviceInfoCfg(ascend910List(1)) })).toMatchObject({
      refused: 'shape',
      message: expect.stringContaining('metadata.name') as unknown as string,
    });
  });
});
