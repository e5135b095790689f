/**
 * The pods holding each device (CONTRACT §1.9) through the engine: kept from the newest
 * snapshot, published only on devices that are not healthy, and only when known.
 */
import { describe, expect, it } from '@jest/globals';
import { publishedDocumentSchema } from '../../contracts/index.js';
import { holdersByDevice } from './holders.js';
import { createEngine } from './index.js';
import { at, npuSnapshot } from './testing.js';

function driver() {
  const engine = createEngine();
  let seq = 0;
  const send = (t: number, holders: Record<string, string[]> | undefined, down = 0, cached = false): void => {
    engine.observe(
      npuSnapshot({ seq: ++seq, t, cached, ...(holders ? { holders } : {}) }, [
        { npu: 0, link: down ? 'down' : 'up' },
        { npu: 1 },
      ]),
      at(t),
    );
  };
  const entry = (t: number) =>
    publishedDocumentSchema.parse(engine.document(at(t), { identity: 't', term: 0 })).nodes['node-a'];
  return { engine, send, entry };
}

describe('device holders', () => {
  it('lists the pods on a failed device only, sorted and counted once per pod', () => {
    const d = driver();
    const holders = {
      'Ascend910-0': ['team-b/infer-1', 'team-a/train-0', 'team-b/infer-1'],
      'Ascend910-1': ['x/y'],
    };
    d.send(0, holders, 1);
    const entry = d.entry(0);
    expect(entry?.npus.map((x) => [x.id, x.status, x.pods])).toEqual([
      ['npu0', 'failed', ['team-a/train-0', 'team-b/infer-1']],
    ]);
    // The engine's own entry (what the drain reads) says the same.
    expect(d.engine.nodeEntry('node-a')?.npus[0]?.pods).toEqual(['team-a/train-0', 'team-b/infer-1']);
  });

  it('says [] for a failed device held by nobody, and nothing when the agent does not know', () => {
    const d = driver();
    d.send(0, { 'Ascend910-1': ['x/y'] }, 1);
    expect(d.entry(0)?.npus[0]?.pods).toEqual([]);
    d.send(1, undefined, 1);
    expect(d.entry(1)?.npus[0]).not.toHaveProperty('pods');
  });

  it('takes a list naming a device the node does not have as not known (it cannot be complete)', () => {
    const d = driver();
    // `GPU-1` is no resource id of this node: the list was mapped from ids of another kind, so
    // its silence on Ascend910-0 does not say nobody holds it.
    d.send(0, { 'Ascend910-1': ['x/y'], 'GPU-1': ['a/b'] }, 1);
    expect(d.entry(0)?.npus[0]).not.toHaveProperty('pods');
    expect(d.engine.nodeEntry('node-a')?.npus[0]).not.toHaveProperty('pods');
    d.send(1, { 'Ascend910-1': ['x/y'] }, 1);
    expect(d.entry(1)?.npus[0]?.pods).toEqual([]);
  });

  it('takes the newest snapshot’s list, a cached one included (the agent’s own reading)', () => {
    const d = driver();
    d.send(0, { 'Ascend910-0': ['a/old'] }, 1);
    d.send(1, { 'Ascend910-0': ['a/new'] }, 1, true);
    expect(d.entry(1)?.npus[0]?.pods).toEqual(['a/new']);
  });

  it('explains who holds each device, whatever its status', () => {
    const d = driver();
    d.send(0, { 'Ascend910-1': ['x/y'] }, 1);
    const explained = d.engine.explain('node-a', undefined, at(0));
    expect(explained.tracked && explained.devices.map((x) => [x.id, x.pods])).toEqual([
      ['npu0', []],
      ['npu1', ['x/y']],
    ]);
  });

  it('maps the wire list, merging repeated devices', () => {
    const pod = (name: string) => ({ namespace: 'ns', name, container: 'c' });
    expect(holdersByDevice(undefined)).toBeNull();
    expect([
      ...(holdersByDevice([
        { resource_id: 'GPU-1', pods: [pod('b')] },
        { resource_id: 'GPU-1', pods: [pod('a'), pod('b')] },
      ]) ?? []),
    ]).toEqual([['GPU-1', ['ns/a', 'ns/b']]]);
  });
});
