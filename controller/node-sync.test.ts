import { describe, expect, it } from '@jest/globals';
import { createEngine } from '../core/engine/index.js';
import { npuSnapshot } from '../core/engine/testing.js';
import { FakeClock, createLogger } from '../platform/index.js';
import { EngineHost } from './engine-host.js';
import { NodeSync } from './node-sync.js';
import type { CachedNode } from './watch/index.js';

const T0 = Date.parse('2026-11-29T08:00:00.000Z');

function node(name: string, fields: Partial<CachedNode> = {}): CachedNode {
  return {
    name,
    accelerator: true,
    ready: true,
    clear: undefined,
    latched: undefined,
    npuHealthy: undefined,
    unschedulable: false,
    remediation: undefined,
    maintenance: undefined,
    npuFaultLabels: [],
    resourceVersion: '1',
    ...fields,
  };
}

function setup() {
  const host = new EngineHost(createEngine(), new FakeClock(T0));
  const dirty: string[] = [];
  const refused: string[] = [];
  let now = T0;
  const sync = new NodeSync(
    host,
    createLogger({ level: 'silent' }),
    { dirty: (n) => dirty.push(n), invalidClear: (n, message) => refused.push(`${n}: ${message}`) },
    () => now,
  );
  return { host, sync, dirty, refused, tick: (ms: number) => (now += ms) };
}

const doc = (host: EngineHost) => host.document({ identity: 'x', term: 1 });

describe('NodeSync', () => {
  it('declares accelerator nodes (unobserved until they report), and not the others', () => {
    const { host, sync } = setup();
    sync.onChange({ name: 'a', previous: undefined, current: node('a') });
    sync.onChange({ name: 'cpu', previous: undefined, current: node('cpu', { accelerator: false }) });
    expect(doc(host).unobserved).toEqual(['a']);
  });

  it('drives the node-not-ready overlay from Ready', () => {
    const { host, sync } = setup();
    sync.onChange({ name: 'a', previous: undefined, current: node('a') });
    host.accept([npuSnapshot({ node: 'a', seq: 1, t: 0 }, [{ npu: 0 }])]);
    sync.onChange({ name: 'a', previous: node('a'), current: node('a', { ready: false }) });
    expect(doc(host).nodes.a?.npus[0]).toMatchObject({ status: 'unknown', reason: 'node-not-ready' });
    sync.onChange({ name: 'a', previous: node('a', { ready: false }), current: node('a') });
    expect(doc(host).nodes.a).toBeUndefined();
  });

  it('passes the named conditions to the engine: node_conditions reasons raised and lifted', () => {
    const { host, sync } = setup();
    sync.onChange({ name: 'a', previous: undefined, current: node('a') });
    host.accept([npuSnapshot({ node: 'a', seq: 1, t: 0 }, [{ npu: 0 }])]);
    const deadlock = node('a', { conditions: { KernelDeadlock: 'True', Custom: 'True' } });
    sync.onChange({ name: 'a', previous: node('a'), current: deadlock });
    expect(doc(host).nodes.a?.npus[0]).toMatchObject({ status: 'unknown', reason: 'kernel-deadlock' });
    const pressure = node('a', { conditions: { KernelDeadlock: 'False', MemoryPressure: 'True' } });
    sync.onChange({ name: 'a', previous: deadlock, current: pressure });
    expect(doc(host).nodes.a?.npus[0]).toMatchObject({
      status: 'healthy',
      signals: ['node-memory-pressure'],
    });
    sync.onChange({ name: 'a', previous: pressure, current: node('a') });
    expect(doc(host).nodes.a).toBeUndefined();
  });

  it('removes a deleted node from the document', () => {
    const { host, sync } = setup();
    sync.onChange({ name: 'a', previous: undefined, current: node('a') });
    host.accept([npuSnapshot({ node: 'a', seq: 1, t: 0 }, [{ npu: 0, link: 'down', power: 90 }])]);
    expect(doc(host).nodes.a).toBeDefined();
    sync.onChange({ name: 'a', previous: node('a'), current: undefined });
    expect(doc(host).nodes.a).toBeUndefined();
    expect(doc(host).node_count).toBe(0);
  });

  it('keeps the failures of a node whose device plugin took its accelerators out of capacity', () => {
    const { host, sync } = setup();
    sync.onChange({ name: 'a', previous: undefined, current: node('a') });
    host.accept([npuSnapshot({ node: 'a', seq: 1, t: 0 }, [{ npu: 0, link: 'down', power: 90 }])]);
    sync.onChange({ name: 'a', previous: node('a'), current: node('a', { accelerator: false }) });
    expect(doc(host).nodes.a?.npus[0]?.status).toBe('failed');
  });

  it('applies no clear before the engine is seeded, then the ones on the Nodes as they are', () => {
    const { host, sync } = setup();
    sync.onChange({ name: 'a', previous: undefined, current: node('a', { clear: 'all' }) });
    expect(sync.appliedClear('a')).toBeUndefined();
    host.seed([
      {
        node: 'a',
        latched: [
          {
            key: '0000:C1:00.0',
            id: 'npu0',
            resource_id: 'Ascend910-0',
            kind: 'npu',
            model: '910B3',
            reasons: ['ecc-uncorrectable'],
            since: '2026-11-29T08:00:00.000Z',
            ecc_errors: 1,
            ecc_uncorrectable: 1,
          },
        ],
      },
    ]);
    expect(host.view('a').latched).toHaveLength(1);
    sync.enableClears([node('a', { clear: 'all' })]);
    expect(host.view('a').latched).toEqual([]);
    expect(sync.appliedClear('a')).toBe('all');
    expect(sync.clearedAt('a')).toBe(T0);
  });

  it('applies a clear annotation once, remembers it while it stays, and refuses a bad one', () => {
    const { host, sync, refused } = setup();
    sync.enableClears([]);
    sync.onChange({ name: 'a', previous: undefined, current: node('a') });
    host.accept([npuSnapshot({ node: 'a', seq: 1, t: 0 }, [{ npu: 0 }])]);
    host.accept([npuSnapshot({ node: 'a', seq: 2, t: 1 }, [{ npu: 0, sbe: 1, dbe: 1 }])]);
    expect(host.view('a').latched).toHaveLength(1);
    sync.onChange({ name: 'a', previous: node('a'), current: node('a', { clear: 'npu0' }) });
    expect(host.view('a').latched).toEqual([]);
    expect(sync.appliedClear('a')).toBe('npu0');
    sync.onChange({ name: 'a', previous: node('a', { clear: 'npu0' }), current: node('a') });
    expect(sync.appliedClear('a')).toBeUndefined();
    sync.onChange({ name: 'a', previous: node('a'), current: node('a', { clear: 'npu0,,x' }) });
    // Reported once, not at every later update of the Node.
    sync.onChange({
      name: 'a',
      previous: node('a', { clear: 'npu0,,x' }),
      current: node('a', { clear: 'npu0,,x', ready: false }),
    });
    expect(refused).toEqual([expect.stringMatching(/^a: npu-fault.io\/clear: /) as unknown as string]);
    expect(sync.appliedClear('a')).toBeUndefined();
  });

  it('marks every changed accelerator node dirty (the leader writes back)', () => {
    const { sync, dirty } = setup();
    sync.onChange({ name: 'a', previous: undefined, current: node('a') });
    sync.onChange({ name: 'cpu', previous: undefined, current: node('cpu', { accelerator: false }) });
    expect(dirty).toEqual(['a']);
  });
});
