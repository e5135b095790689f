import { describe, expect, it } from '@jest/globals';
import { nodeProblemSchema } from '../../contracts/index.js';
import { describeWithRealFixtures, readRealFixture } from '../../test/fixtures.js';
import { nodeInfoCheckCode } from './go-json.js';
import { nodeProblemOf, parseNodeInfo, type NodeInfoView } from './node-info.js';
import { nodeInfoText } from './testing.js';

const viewOf = (text: string): NodeInfoView => {
  const result = parseNodeInfo('node-a', { NodeInfo: text });
  if (!('view' in result)) throw new Error(result.message);
  return result.view;
};
const refusalOf = (data: Record<string, string>, node = 'node-a') => {
  const result = parseNodeInfo(node, data);
  if ('view' in result) throw new Error('accepted');
  return result;
};
const cpu = { DeviceType: 'CPU', DeviceId: 1, FaultCode: ['00000011'], FaultLevel: 'SeparateFault' };

describe("NodeD's CheckCode", () => {
  // Computed by Go 1.26's encoding/json: json.Unmarshal of each NodeInfo into NodeD's
  // FaultDevInfo struct, then sha256 of json.Marshal, as NodeD's MakeDataHash and ClusterD's
  // EqualDataHash do.
  it.each([
    [
      '{"FaultDevList":[{"DeviceType":"CPU","DeviceId":1,"FaultCode":["00000011"],"FaultLevel":"SeparateFault"}],"NodeStatus":"UnHealthy"}',
      '215f43b3551aaa62df1f78f345a0847f6b06f8b5a55e51efa30180a794ee6f0b',
    ],
    [
      '{"FaultDevList":[{"DeviceType":"Memory","DeviceId":3,"FaultCode":["0000001A","0000002b"],"FaultLevel":"PreSeparateFault"},{"DeviceType":"CPU","DeviceId":0,"FaultCode":["00000001"],"FaultLevel":"NotHandleFault"}],"NodeStatus":"PreSeparate"}',
      'c56a1b1f0b90a6a79c05e232423812a3585221e1eddeb7a4f24fbdf290bbcd43',
    ],
    [
      '{"FaultDevList":[],"NodeStatus":"Healthy"}',
      'de38ed93b4fcbb7e7314695274a68ccf4aaece2c8fa2df361942d25731584886',
    ],
    ['{"NodeStatus":"UnHealthy"}', '0711543b0f14524133f94abd29b08786968aee5d8126ae9ca90e8484f1b981bc'],
    [
      '{"FaultDevList":[null,{"DeviceType":"<Fan&Board>","DeviceId":-2}],"NodeStatus":"UnHealthy"}',
      '42cc5c2d2b5e4b91b37fb26216bd7210c5c38356ae9753bc9abafe14414a6841',
    ],
  ])('accepts %s with the CheckCode Go computes', (info, checkCode) => {
    const view = viewOf(`{"NodeInfo":${info},"CheckCode":"${checkCode}"}`);
    expect(view.node).toBe('node-a');
  });

  it('is the same whatever the key order or spacing written, and differs with the content', () => {
    const a = viewOf(
      '{"CheckCode":"215f43b3551aaa62df1f78f345a0847f6b06f8b5a55e51efa30180a794ee6f0b", "NodeInfo": {"NodeStatus":"UnHealthy","FaultDevList":[{"FaultLevel":"SeparateFault","FaultCode":["00000011"],"DeviceId":1,"DeviceType":"CPU"}]}}',
    );
    expect(a.devices).toEqual([{ type: 'CPU', id: 1, codes: ['00000011'], level: 'SeparateFault' }]);
    expect(nodeInfoCheckCode([cpu], 'UnHealthy')).not.toBe(nodeInfoCheckCode([cpu], 'PreSeparate'));
  });
});

describe('parseNodeInfo (in-repo samples)', () => {
  it('reads the faulty devices and the status', () => {
    const view = viewOf(
      nodeInfoText(
        [cpu, { DeviceType: 'Memory', DeviceId: 3, FaultCode: ['0000001a'], FaultLevel: 'PreSeparateFault' }],
        'UnHealthy',
      ),
    );
    expect(view).toEqual({
      node: 'node-a',
      status: 'UnHealthy',
      devices: [
        { type: 'CPU', id: 1, codes: ['00000011'], level: 'SeparateFault' },
        { type: 'Memory', id: 3, codes: ['0000001A'], level: 'PreSeparateFault' },
      ],
    });
  });

  it.each([
    [
      'a wrong CheckCode',
      { NodeInfo: nodeInfoText([cpu], 'UnHealthy', { checkCode: 'ab'.repeat(32) }) },
      'integrity',
      /CheckCode: does not match/,
    ],
    [
      'no CheckCode',
      { NodeInfo: JSON.stringify({ NodeInfo: { FaultDevList: [cpu], NodeStatus: 'UnHealthy' } }) },
      'integrity',
      /CheckCode: missing/,
    ],
    ['no NodeInfo key', {}, 'shape', /^NodeInfo: missing/],
    ['text that is not JSON', { NodeInfo: '{"NodeInfo":' }, 'json', /^NodeInfo: not JSON/],
    [
      'a NodeInfo that is not an object',
      { NodeInfo: '{"NodeInfo":[],"CheckCode":"x"}' },
      'shape',
      /NodeInfo.NodeInfo: must be an object/,
    ],
    [
      'a FaultDevList that is not an array',
      { NodeInfo: '{"NodeInfo":{"FaultDevList":{}},"CheckCode":"x"}' },
      'shape',
      /FaultDevList: must be an array/,
    ],
    [
      'a fractional DeviceId',
      { NodeInfo: nodeInfoText([{ ...cpu, DeviceId: 1.5 }], 'UnHealthy') },
      'shape',
      /FaultDevList\[0\]\.DeviceId: must be an integer/,
    ],
    [
      'a fault code that is not hex',
      { NodeInfo: nodeInfoText([{ ...cpu, FaultCode: ['0x11'] }], 'UnHealthy') },
      'shape',
      /FaultDevList\[0\]\.FaultCode: "0x11" is not a hex fault code/,
    ],
    [
      'a DeviceType with a control character',
      { NodeInfo: nodeInfoText([{ ...cpu, DeviceType: 'C\u001bPU' }], 'UnHealthy') },
      'shape',
      /FaultDevList\[0\]\.DeviceType: must be printable/,
    ],
    [
      'a NodeStatus that is a number',
      { NodeInfo: '{"NodeInfo":{"NodeStatus":2},"CheckCode":"x"}' },
      'shape',
      /NodeInfo.NodeStatus: must be a string/,
    ],
    [
      'too many entries',
      {
        NodeInfo: nodeInfoText(
          Array.from({ length: 257 }, () => cpu),
          'UnHealthy',
        ),
      },
      'shape',
      /more than 256 entries/,
    ],
    ['more than 1 MiB', { NodeInfo: ' '.repeat(1024 * 1024 + 1) }, 'oversize', /more than 1048576 bytes/],
  ])('refuses %s with a one-line reason naming the field', (_, data, reason, message) => {
    const refused = refusalOf(data);
    expect(refused.refused).toBe(reason);
    expect(refused.message).toMatch(message);
    expect(refused.message).not.toContain('\n');
  });

  it('refuses a ConfigMap named for something that is not a node name', () => {
    expect(refusalOf({ NodeInfo: nodeInfoText([cpu], 'UnHealthy') }, 'Not_A_Node').message).toMatch(
      /^metadata.name:/,
    );
  });
});

describe('nodeProblemOf', () => {
  const problemOf = (faults: Parameters<typeof nodeInfoText>[0], status: string) =>
    nodeProblemOf(viewOf(nodeInfoText(faults, status)));

  it('a SeparateFault is host-hardware-fault, naming the device, codes and level', () => {
    expect(problemOf([cpu], 'UnHealthy')).toEqual({
      reason: 'host-hardware-fault',
      message: 'NodeD: node UnHealthy; CPU 1 00000011 (SeparateFault)',
    });
  });
  it('a PreSeparateFault is host-hardware-warning; NotHandleFault devices are not named', () => {
    expect(
      problemOf(
        [
          { DeviceType: 'CPU', DeviceId: 0, FaultCode: ['00000001'], FaultLevel: 'NotHandleFault' },
          { DeviceType: 'Memory', DeviceId: 3, FaultCode: ['0000001A'], FaultLevel: 'PreSeparateFault' },
        ],
        'PreSeparate',
      ),
    ).toEqual({
      reason: 'host-hardware-warning',
      message: 'NodeD: node PreSeparate; Memory 3 0000001A (PreSeparateFault)',
    });
  });
  it('the worse of the devices and the status decides: UnHealthy alone is a fault, a SeparateFault under a Healthy status too', () => {
    expect(problemOf([], 'UnHealthy')?.reason).toBe('host-hardware-fault');
    expect(problemOf([cpu], 'Healthy')?.reason).toBe('host-hardware-fault');
  });
  it('NotHandleFault alone, or a healthy node, is no problem', () => {
    expect(problemOf([{ ...cpu, FaultLevel: 'NotHandleFault' }], 'Healthy')).toBeUndefined();
    expect(problemOf([], 'Healthy')).toBeUndefined();
  });
  it('a level or status this reader does not know is a warning: never hidden, never a guess at separation', () => {
    expect(problemOf([{ ...cpu, FaultLevel: 'RebootFault' }], 'Healthy')?.reason).toBe(
      'host-hardware-warning',
    );
    expect(problemOf([], 'Degraded')?.reason).toBe('host-hardware-warning');
  });
  it('the message is a valid node problem message however many devices are listed', () => {
    const many = Array.from({ length: 200 }, (_, i) => ({ ...cpu, DeviceId: i, DeviceType: 'Ä'.repeat(64) }));
    const problem = problemOf(many, 'UnHealthy');
    expect(nodeProblemSchema.safeParse(problem).success).toBe(true);
    expect(Array.from(problem?.message ?? '').length).toBe(256);
  });
});

describeWithRealFixtures('MindCluster node-info (real sample)', () => {
  it("mindx-nodeinfo-1.json (MindCluster's documentation example) fails the integrity check, as ClusterD would refuse it", () => {
    const refused = refusalOf({ NodeInfo: readRealFixture('mindx-nodeinfo-1.json') });
    expect(refused).toMatchObject({ refused: 'integrity' });
  });
  it('its content, with the CheckCode NodeD computes, is a CPU SeparateFault: host-hardware-fault', () => {
    const sample = JSON.parse(readRealFixture('mindx-nodeinfo-1.json')) as {
      NodeInfo: { FaultDevList: Parameters<typeof nodeInfoText>[0]; NodeStatus: string };
    };
    const view = viewOf(nodeInfoText(sample.NodeInfo.FaultDevList, sample.NodeInfo.NodeStatus));
    expect(nodeProblemOf(view)).toEqual({
      reason: 'host-hardware-fault',
      message: 'NodeD: node UnHealthy; CPU 1 00000011 (SeparateFault)',
    });
  });
});
