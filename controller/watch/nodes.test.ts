import { describe, expect, it } from '@jest/globals';
import { FakeClock, Registry, createLogger } from '../../platform/index.js';
import { FakeListWatchClient } from '../../platform/k8s/watch/testing.js';
import type { RawObject } from '../../platform/k8s/index.js';
import {
  acceleratorRule,
  createNodeWatch,
  isNonZeroQuantity,
  nodeFromObject,
  type NodeChange,
  type NodeWatchOptions,
} from './nodes.js';
import { DEFAULT_ACCELERATOR_RESOURCES } from './config.js';

interface NodeSpec {
  capacity?: Record<string, string>;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  conditions?: {
    type: string;
    status: string;
    reason?: string;
    message?: string;
    lastHeartbeatTime?: string;
  }[];
}

const node = (name: string, spec: NodeSpec = {}): RawObject => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels: spec.labels ?? {}, annotations: spec.annotations ?? {}, resourceVersion: '7' },
  spec: { providerID: 'kwok://x' },
  status: {
    capacity: { cpu: '96', memory: '1Ti', ...spec.capacity },
    allocatable: { cpu: '96' },
    conditions: spec.conditions ?? [],
    images: [{ names: ['big-image'], sizeBytes: 1e9 }],
  },
});

const defaultRule = acceleratorRule({ resourceNames: [...DEFAULT_ACCELERATOR_RESOURCES], labelSelector: '' });

describe('nodeFromObject: the fields cached', () => {
  it('keeps only name, accelerator, ready, our annotations and labels, unschedulable, NPUHealthy and resourceVersion', () => {
    const raw = node('n1', {
      capacity: { 'huawei.com/Ascend910': '8' },
      labels: {
        'npu-fault.io/remediation': 'disabled',
        'kubernetes.io/hostname': 'n1',
        'npu-fault.io/a': '',
      },
      annotations: {
        'npu-fault.io/clear': 'all',
        'npu-fault.io/latched': '[]',
        'npu-fault.io/remediation': '{}',
        'npu-fault.io/maintenance': 'driver upgrade',
        'other/annotation': 'x',
      },
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          lastHeartbeatTime: '2026-01-01T00:00:00Z',
        },
        { type: 'NPUHealthy', status: 'False', reason: 'DeviceFailed', message: '1 of 8 devices failed' },
      ],
    });
    const cached = nodeFromObject({ ...raw, spec: { unschedulable: true } } as RawObject, defaultRule);
    expect(cached).toEqual({
      name: 'n1',
      accelerator: true,
      ready: true,
      clear: 'all',
      latched: '[]',
      npuHealthy: { status: 'False', reason: 'DeviceFailed', message: '1 of 8 devices failed' },
      unschedulable: true,
      remediation: '{}',
      maintenance: 'driver upgrade',
      npuFaultLabels: ['npu-fault.io/a=', 'npu-fault.io/remediation=disabled'],
      resourceVersion: '7',
    });
  });

  it.each([
    ['True', true],
    ['False', false],
    ['Unknown', false],
  ])('Ready %s → %s', (status, ready) => {
    expect(nodeFromObject(node('n', { conditions: [{ type: 'Ready', status }] }), defaultRule)?.ready).toBe(
      ready,
    );
  });

  it('no Ready condition → ready undefined; no annotations or NPUHealthy → undefined', () => {
    expect(nodeFromObject(node('n'), defaultRule)).toMatchObject({
      ready: undefined,
      clear: undefined,
      latched: undefined,
      npuHealthy: undefined,
    });
  });

  it.each([
    ['huawei.com/Ascend910', '8', true],
    ['huawei.com/Ascend310P', '4', true],
    ['huawei.com/Ascend310', '1', true],
    ['nvidia.com/gpu', '8', true],
    ['nvidia.com/gpu', '0', false],
    ['amd.com/gpu', '8', false],
  ])('capacity %s: %s → accelerator %s', (resource, quantity, accelerator) => {
    expect(nodeFromObject(node('n', { capacity: { [resource]: quantity } }), defaultRule)?.accelerator).toBe(
      accelerator,
    );
  });

  it('a node without accelerators is cached as accelerator: false', () => {
    expect(nodeFromObject(node('cpu-1'), defaultRule)?.accelerator).toBe(false);
  });

  it('configured resource names replace the defaults', () => {
    const rule = acceleratorRule({ resourceNames: ['amd.com/gpu'], labelSelector: '' });
    expect(nodeFromObject(node('n', { capacity: { 'amd.com/gpu': '2' } }), rule)?.accelerator).toBe(true);
    expect(nodeFromObject(node('n', { capacity: { 'nvidia.com/gpu': '2' } }), rule)?.accelerator).toBe(false);
  });

  it('a node matching the label selector is an accelerator node without capacity', () => {
    const rule = acceleratorRule({ resourceNames: [], labelSelector: 'accelerator in (npu, gpu)' });
    expect(nodeFromObject(node('n', { labels: { accelerator: 'npu' } }), rule)?.accelerator).toBe(true);
    expect(nodeFromObject(node('n', { labels: { accelerator: 'cpu' } }), rule)?.accelerator).toBe(false);
  });

  it('keeps the conditions of the types the rules name, with a known status, and no others', () => {
    const types = new Set(['KernelDeadlock', 'MemoryPressure', 'ReadonlyFilesystem', 'DiskPressure']);
    const raw = node('n', {
      conditions: [
        { type: 'Ready', status: 'True' },
        { type: 'KernelDeadlock', status: 'True', reason: 'DockerHung', message: 'task hung' },
        { type: 'KernelDeadlock', status: 'False' }, // a second of one type: the first counts
        { type: 'MemoryPressure', status: 'False' },
        { type: 'ReadonlyFilesystem', status: 'maybe' }, // not True/False/Unknown: not kept
        { type: 'SomethingElse', status: 'True' }, // not named: not kept
      ],
    });
    const cached = nodeFromObject(raw, defaultRule, types);
    expect({ ...cached?.conditions }).toEqual({ KernelDeadlock: 'True', MemoryPressure: 'False' });
    expect(nodeFromObject(raw, defaultRule)?.conditions).toBeUndefined(); // no types named
    const odd = {
      metadata: { name: 'n' },
      status: { conditions: [null, 5, { type: 7, status: 'True' }, { type: 'DiskPressure', status: true }] },
    } as unknown as RawObject;
    expect(nodeFromObject(odd, defaultRule, types)?.conditions).toBeUndefined();
    const proto = JSON.parse(
      '{"metadata":{"name":"n"},"status":{"conditions":[{"type":"__proto__","status":"True"}]}}',
    );
    expect(
      nodeFromObject(proto as RawObject, defaultRule, new Set(['__proto__']))?.conditions?.['__proto__'],
    ).toBe('True');
  });

  it('reads defensively: odd shapes are ignored, never thrown on', () => {
    const odd = {
      metadata: { name: 'n', labels: 'not a map', annotations: { 'npu-fault.io/clear': 5 } },
      status: { capacity: ['nvidia.com/gpu'], conditions: 'Ready' },
    } as unknown as RawObject;
    expect(nodeFromObject(odd, defaultRule)).toEqual({
      name: 'n',
      accelerator: false,
      ready: undefined,
      clear: undefined,
      latched: undefined,
      npuHealthy: undefined,
      unschedulable: false,
      remediation: undefined,
      maintenance: undefined,
      npuFaultLabels: [],
      resourceVersion: '',
    });
    expect(nodeFromObject({ metadata: {} }, defaultRule)).toBeUndefined();
  });
});

describe('isNonZeroQuantity', () => {
  it.each([
    ['8', true],
    ['1k', true],
    ['500m', true],
    ['0.5', true],
    ['+2', true],
    ['0', false],
    ['00', false],
    ['0k', false],
    ['', false],
    [undefined, false],
    ['abc', false],
  ])('%s → %s', (quantity, expected) => {
    expect(isNonZeroQuantity(quantity)).toBe(expected);
  });
});

describe('node watch', () => {
  function setup(options: NodeWatchOptions = {}) {
    const clock = new FakeClock();
    const client = new FakeListWatchClient({ description: '/api/v1/nodes' });
    const changes: NodeChange[] = [];
    let synced = 0;
    const watch = createNodeWatch(
      { client, clock, log: createLogger({ level: 'silent' }), registry: new Registry(), random: () => 0.5 },
      { ...options, callbacks: { onChange: (c) => changes.push(c), onSynced: () => (synced += 1) } },
    );
    const stop = new AbortController();
    const running = watch.start(stop.signal);
    return {
      client,
      changes,
      watch,
      synced: () => synced,
      async stop() {
        stop.abort();
        await running;
      },
    };
  }

  const ready = (status: string, heartbeat = '2026-01-01T00:00:00Z'): NodeSpec['conditions'] => [
    { type: 'Ready', status, lastHeartbeatTime: heartbeat },
  ];

  it('reports added, changed (with both values) and deleted nodes; heartbeats alone are no change', async () => {
    const t = setup();
    t.client.apply(node('gpu-1', { capacity: { 'nvidia.com/gpu': '8' }, conditions: ready('True') }));
    t.client.apply(node('cpu-1'));
    await t.client.waitForWatch(1);
    expect(t.synced()).toBe(1);
    expect(t.changes.map((c) => [c.name, c.previous?.ready, c.current?.accelerator])).toEqual([
      ['cpu-1', undefined, false],
      ['gpu-1', undefined, true],
    ]);
    expect(t.watch.acceleratorNodes().map((n) => n.name)).toEqual(['gpu-1']);
    t.changes.length = 0;

    t.client.apply(
      node('gpu-1', {
        capacity: { 'nvidia.com/gpu': '8' },
        conditions: ready('True', '2026-01-01T00:00:10Z'),
      }),
    );
    expect(t.changes).toEqual([]);
    expect(t.watch.get('gpu-1')?.resourceVersion).toBe(t.client.resourceVersion);

    t.client.apply(node('gpu-1', { capacity: { 'nvidia.com/gpu': '8' }, conditions: ready('False') }));
    expect(t.changes).toHaveLength(1);
    expect(t.changes[0]).toMatchObject({
      name: 'gpu-1',
      previous: { ready: true },
      current: { ready: false },
    });

    t.client.delete('gpu-1');
    expect(t.changes[1]).toMatchObject({ name: 'gpu-1', previous: { ready: false }, current: undefined });
    expect(t.watch.get('gpu-1')).toBeUndefined();
    expect(t.watch.size).toBe(1);
    await t.stop();
  });

  it('reports the clear annotation, the latched annotation and the NPUHealthy condition as they change', async () => {
    const t = setup();
    const base = { capacity: { 'huawei.com/Ascend910': '8' } };
    t.client.apply(node('npu-1', base));
    await t.client.waitForWatch(1);
    t.changes.length = 0;
    t.client.apply(node('npu-1', { ...base, annotations: { 'npu-fault.io/clear': 'npu3' } }));
    t.client.apply(node('npu-1', { ...base, annotations: { 'npu-fault.io/latched': '[{"id":"npu3"}]' } }));
    t.client.apply(
      node('npu-1', {
        ...base,
        annotations: { 'npu-fault.io/latched': '[{"id":"npu3"}]' },
        conditions: [{ type: 'NPUHealthy', status: 'False', reason: 'DeviceFailed', message: 'npu3' }],
      }),
    );
    expect(
      t.changes.map((c) => [c.current?.clear, c.current?.latched, c.current?.npuHealthy?.reason]),
    ).toEqual([
      ['npu3', undefined, undefined],
      [undefined, '[{"id":"npu3"}]', undefined],
      [undefined, '[{"id":"npu3"}]', 'DeviceFailed'],
    ]);
    await t.stop();
  });

  it('reports a change of a named condition, and not of others (the types asked at each event)', async () => {
    let types = new Set(['KernelDeadlock']);
    const t = setup({ conditionTypes: () => types });
    const base = { capacity: { 'nvidia.com/gpu': '8' } };
    const with_ = (...conditions: { type: string; status: string }[]) =>
      node('gpu-1', { ...base, conditions });
    t.client.apply(with_({ type: 'KernelDeadlock', status: 'False' }));
    await t.client.waitForWatch(1);
    t.changes.length = 0;
    t.client.apply(
      with_({ type: 'KernelDeadlock', status: 'False' }, { type: 'GPUFallenOff', status: 'True' }),
    );
    expect(t.changes).toEqual([]);
    t.client.apply(
      with_({ type: 'KernelDeadlock', status: 'True' }, { type: 'GPUFallenOff', status: 'True' }),
    );
    expect(t.changes.map((c) => ({ ...c.current?.conditions }))).toEqual([{ KernelDeadlock: 'True' }]);
    types = new Set(['KernelDeadlock', 'GPUFallenOff']); // a rules reload names another type
    t.client.apply(
      with_({ type: 'KernelDeadlock', status: 'True' }, { type: 'GPUFallenOff', status: 'True' }),
    );
    expect(t.changes.map((c) => ({ ...c.current?.conditions }))).toEqual([
      { KernelDeadlock: 'True' },
      { KernelDeadlock: 'True', GPUFallenOff: 'True' },
    ]);
    await t.stop();
  });

  it('a node losing its accelerator resource is a change with accelerator false, not a deletion', async () => {
    const t = setup();
    t.client.apply(node('gpu-1', { capacity: { 'nvidia.com/gpu': '8' } }));
    await t.client.waitForWatch(1);
    t.client.apply(node('gpu-1', { capacity: { 'nvidia.com/gpu': '0' } }));
    expect(t.changes.at(-1)).toMatchObject({
      previous: { accelerator: true },
      current: { accelerator: false },
    });
    await t.stop();
  });

  it('uses the configured label selector and watchdog', async () => {
    const t = setup({
      config: { resourceNames: [], labelSelector: 'npu-fault.io/accelerator=true', watchdogSeconds: 5 },
    });
    t.client.apply(node('labelled', { labels: { 'npu-fault.io/accelerator': 'true' } }));
    t.client.apply(node('gpu', { capacity: { 'nvidia.com/gpu': '8' } }));
    const request = await t.client.waitForWatch(1);
    expect(t.watch.acceleratorNodes().map((n) => n.name)).toEqual(['labelled']);
    expect(request.idleTimeoutMs).toBe(10_000);
    expect(t.watch.name).toBe('watch-nodes');
    await t.stop();
  });

  it('refuses a bad configuration in one line per field', () => {
    expect(() => setup({ config: { labelSelector: 'a in (b', resourceNames: ['gpu'] } })).toThrow(
      /nodes\.resourceNames\.0: must be an extended resource name.*\n?.*nodes\.labelSelector: label selector term 1 "a in \(b": missing "\)"/s,
    );
  });
});
