import { describe, expect, it } from '@jest/globals';
import { fakePod } from './fake-pod-client.js';
import { podsToEvict } from './pods-to-evict.js';

const KEYS = ['huawei.com/Ascend910'];

describe('podsToEvict', () => {
  const web = fakePod({ name: 'web' });
  const scratch = fakePod({ name: 'scratch', emptyDirVolumes: ['cache'] });
  const bare = fakePod({ name: 'bare', namespace: 'jobs' });
  const agent = fakePod({ name: 'agent', namespace: 'ai-infra', daemonSet: true });
  const mirror = fakePod({ name: 'etcd-n1', namespace: 'kube-system', mirror: true });
  const going = fakePod({ name: 'going', terminating: true });
  const done = fakePod({ name: 'done', phase: 'Succeeded' });
  const failed = fakePod({ name: 'failed', phase: 'Failed' });
  const pending = fakePod({ name: 'pending', phase: 'Pending' });

  it('evicts like kubectl drain --ignore-daemonsets --delete-emptydir-data', () => {
    const selection = podsToEvict([web, scratch, bare, agent, mirror, going, done, failed, pending]);
    expect(selection.scope).toBe('node');
    expect(selection.evict).toEqual([web, scratch, bare, pending]);
    expect(selection.skipped).toEqual([
      { pod: 'ai-infra/agent', why: 'daemonset' },
      { pod: 'kube-system/etcd-n1', why: 'mirror' },
      { pod: 'default/going', why: 'terminating' },
      { pod: 'default/done', why: 'finished' },
      { pod: 'default/failed', why: 'finished' },
    ]);
    expect(selection.waitFor).toEqual([going]);
  });

  it('leaves a finished DaemonSet pod alone as a DaemonSet pod, a terminating finished one as finished', () => {
    const selection = podsToEvict([
      { ...agent, phase: 'Succeeded' },
      { ...done, terminating: true },
    ]);
    expect(selection.skipped.map((s) => s.why)).toEqual(['daemonset', 'finished']);
    expect(selection.waitFor).toEqual([]);
  });

  describe('per device', () => {
    const holder = fakePod({ name: 'holder', annotations: { 'huawei.com/Ascend910': 'Ascend910-1' } });
    const other = fakePod({ name: 'other', annotations: { 'huawei.com/Ascend910': 'Ascend910-0' } });
    const leaving = fakePod({
      name: 'leaving',
      terminating: true,
      annotations: { 'huawei.com/Ascend910': 'Ascend910-1' },
    });
    const scope = { kind: 'devices', devices: ['Ascend910-1'], annotationKeys: KEYS } as const;

    it('evicts only the holders of the failed devices when the allocation is known', () => {
      const selection = podsToEvict([holder, other, web, agent, leaving, going], scope);
      expect(selection.scope).toBe('devices');
      expect(selection.evict).toEqual([holder]);
      expect(selection.waitFor).toEqual([leaving]);
      expect(selection.skipped).toEqual([
        { pod: 'default/other', why: 'other-devices' },
        { pod: 'default/web', why: 'other-devices' },
        { pod: 'ai-infra/agent', why: 'daemonset' },
        { pod: 'default/leaving', why: 'terminating' },
        { pod: 'default/going', why: 'terminating' },
      ]);
    });

    it('falls back to the whole node when the allocation is unknown', () => {
      const selection = podsToEvict([web, scratch, agent], scope);
      expect(selection.scope).toBe('node');
      expect(selection.evict).toEqual([web, scratch]);
    });
  });
});
