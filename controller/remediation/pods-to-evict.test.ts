import { describe, expect, it } from '@jest/globals';
import { fakePod } from './fake-pod-client.js';
import type { PodSummary } from './pod-client.js';
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
    const ASCEND = ['huawei.com/Ascend910'];
    const chip = (name: string, devices: string | undefined, extra: Partial<PodSummary> = {}) =>
      fakePod({
        name,
        deviceResources: ASCEND,
        annotations: devices === undefined ? {} : { 'huawei.com/Ascend910': devices },
        ...extra,
      });
    const holder = chip('holder', 'Ascend910-1');
    const other = chip('other', 'Ascend910-0');
    const leaving = chip('leaving', 'Ascend910-1', { terminating: true });
    const silent = chip('silent', undefined);
    const silentLeaving = chip('silent-leaving', undefined, { terminating: true });
    const scope = { kind: 'devices', devices: ['Ascend910-1'], annotationKeys: KEYS } as const;

    it('evicts only the holders of the failed devices; pods asking for no accelerator stay', () => {
      const selection = podsToEvict([holder, other, web, agent, leaving, going], scope);
      expect(selection.scope).toBe('devices');
      expect(selection.evict).toEqual([holder]);
      expect(selection.waitFor).toEqual([leaving]);
      expect(selection.unknownAllocation).toEqual([]);
      expect(selection.skipped).toEqual([
        { pod: 'default/other', why: 'other-devices' },
        { pod: 'default/web', why: 'no-accelerator' },
        { pod: 'ai-infra/agent', why: 'daemonset' },
        { pod: 'default/leaving', why: 'terminating' },
        { pod: 'default/going', why: 'terminating' },
      ]);
    });

    it('evicts an accelerator pod without a readable allocation itself, and no one else for it', () => {
      const selection = podsToEvict([silent, holder, other, web, scratch, bare, silentLeaving], scope);
      expect(selection.scope).toBe('devices');
      expect(selection.evict).toEqual([silent, holder]);
      expect(selection.waitFor).toEqual([silentLeaving]);
      expect(selection.unknownAllocation).toEqual(['default/silent', 'default/silent-leaving']);
      expect(selection.skipped.map((s) => [s.pod, s.why])).toEqual([
        ['default/other', 'other-devices'],
        ['default/web', 'no-accelerator'],
        ['default/scratch', 'no-accelerator'],
        ['jobs/bare', 'no-accelerator'],
        ['default/silent-leaving', 'terminating'],
      ]);
    });

    it('does not evict a pod that asks for no accelerator but claims the failed device in its annotation', () => {
      const claims = fakePod({ name: 'claims', annotations: { 'huawei.com/Ascend910': 'Ascend910-1' } });
      const selection = podsToEvict([claims], scope);
      expect(selection.evict).toEqual([]);
      expect(selection.skipped).toEqual([{ pod: 'default/claims', why: 'no-accelerator' }]);
    });

    it('leaves DaemonSet, mirror and finished pods alone as on a whole-node drain', () => {
      const selection = podsToEvict(
        [
          chip('ds', undefined, { daemonSet: true }),
          chip('static', undefined, { mirror: true }),
          chip('done', 'Ascend910-1', { phase: 'Succeeded' }),
        ],
        scope,
      );
      expect(selection.evict).toEqual([]);
      expect(selection.unknownAllocation).toEqual([]);
      expect(selection.skipped.map((s) => s.why)).toEqual(['daemonset', 'mirror', 'finished']);
    });
    describe('with the holders the kubelet named (CONTRACT §1.9)', () => {
      const holders = (entries: Record<string, string[]>) => ({
        ...scope,
        holders: new Map(Object.entries(entries)),
      });

      it('evicts exactly the named holders, whatever the annotations say', () => {
        // `other` annotates another device and `silent` none: the kubelet's word decides.
        const selection = podsToEvict(
          [holder, other, silent, web],
          holders({ 'Ascend910-1': ['default/other', 'default/silent'] }),
        );
        expect(selection.evict).toEqual([other, silent]);
        expect(selection.unknownAllocation).toEqual([]);
        expect(selection.skipped.map((s) => [s.pod, s.why])).toEqual([
          ['default/holder', 'other-devices'],
          ['default/web', 'no-accelerator'],
        ]);
      });

      it('never evicts a named pod that asks for no accelerator (an agent names which, the spec says whether)', () => {
        const selection = podsToEvict([web], holders({ 'Ascend910-1': ['default/web'] }));
        expect(selection.evict).toEqual([]);
        expect(selection.skipped).toEqual([{ pod: 'default/web', why: 'no-accelerator' }]);
      });

      it('evicts nobody for a failed device known to be held by nobody', () => {
        const selection = podsToEvict([holder, silent], holders({ 'Ascend910-1': [] }));
        expect(selection.evict).toEqual([]);
      });

      it('falls back to the annotations for the failed devices whose holders are not known', () => {
        const both = { ...holders({ 'Ascend910-1': [] }), devices: ['Ascend910-1', 'Ascend910-0'] };
        const selection = podsToEvict([holder, other, silent], both);
        // Ascend910-0 is not known: `other` names it, `silent` may hold it; `holder` names only 1.
        expect(selection.evict).toEqual([other, silent]);
        expect(selection.unknownAllocation).toEqual(['default/silent']);
      });
    });
  });
});
