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

      it('for a GPU, evicts exactly the named holders, whatever the annotations say', () => {
        // NVIDIA's device plugin mounts what the kubelet allocated: the kubelet's word decides.
        const uuid = 'GPU-8f6e1c2a-1111-2222-3333-444455556666';
        const gpu = (name: string, annotated?: string) =>
          fakePod({
            name,
            deviceResources: ['nvidia.com/gpu'],
            annotations: annotated === undefined ? {} : { 'huawei.com/Ascend910': annotated },
          });
        const [claims, named, silentGpu] = [gpu('claims', uuid), gpu('named', 'GPU-0'), gpu('silent-gpu')];
        const selection = podsToEvict([claims, named, silentGpu, web], {
          kind: 'devices',
          devices: [uuid],
          annotationKeys: KEYS,
          holders: new Map([[uuid, ['default/named']]]),
        });
        expect(selection.evict).toEqual([named]);
        expect(selection.unknownAllocation).toEqual([]);
        expect(selection.skipped.map((s) => [s.pod, s.why])).toEqual([
          ['default/claims', 'other-devices'],
          ['default/silent-gpu', 'other-devices'],
          ['default/web', 'no-accelerator'],
        ]);
      });

      it('for an Ascend device, evicts the named holders and the pods whose annotation names it (Volcano may mount another device than the kubelet picked)', () => {
        // `other` annotates another device and `silent` none; the kubelet named both. `holder`
        // mounts Ascend910-1 (its annotation) though the kubelet's pick for it was another.
        const vnpu = chip('vnpu', 'Ascend910-2c-100-1');
        const claims = fakePod({ name: 'claims', annotations: { 'huawei.com/Ascend910': 'Ascend910-1' } });
        const selection = podsToEvict(
          [holder, other, silent, vnpu, claims, web],
          holders({ 'Ascend910-1': ['default/other', 'default/silent'] }),
        );
        expect(selection.evict).toEqual([holder, other, silent, vnpu]);
        expect(selection.unknownAllocation).toEqual([]);
        expect(selection.skipped.map((s) => [s.pod, s.why])).toEqual([
          ['default/claims', 'no-accelerator'],
          ['default/web', 'no-accelerator'],
        ]);
      });

      it('for an Ascend device, leaves a pod the holders do not name whose annotation names only other devices or none', () => {
        const selection = podsToEvict([other, silent], holders({ 'Ascend910-1': ['default/holder'] }));
        expect(selection.evict).toEqual([]);
        expect(selection.unknownAllocation).toEqual([]);
        expect(selection.skipped.map((s) => s.why)).toEqual(['other-devices', 'other-devices']);
      });

      it('never evicts a named pod that asks for no accelerator (an agent names which, the spec says whether)', () => {
        const selection = podsToEvict([web], holders({ 'Ascend910-1': ['default/web'] }));
        expect(selection.evict).toEqual([]);
        expect(selection.skipped).toEqual([{ pod: 'default/web', why: 'no-accelerator' }]);
      });

      it('evicts, for a failed device known to be held by nobody, only the Ascend pods whose annotation names it', () => {
        expect(podsToEvict([other, silent], holders({ 'Ascend910-1': [] })).evict).toEqual([]);
        expect(podsToEvict([holder, other, silent], holders({ 'Ascend910-1': [] })).evict).toEqual([holder]);
        const uuid = 'GPU-8f6e1c2a-1111-2222-3333-444455556666';
        const gpu = fakePod({ name: 'gpu', deviceResources: ['nvidia.com/gpu'] });
        const none = {
          kind: 'devices',
          devices: [uuid],
          annotationKeys: KEYS,
          holders: new Map([[uuid, []]]),
        } as const;
        expect(podsToEvict([gpu], none).evict).toEqual([]);
      });

      it('falls back to the annotations for the failed devices whose holders are not known', () => {
        const both = { ...holders({ 'Ascend910-1': [] }), devices: ['Ascend910-1', 'Ascend910-0'] };
        const selection = podsToEvict([holder, other, silent], both);
        // Ascend910-0 is not known: `other` names it, `silent` may hold it; `holder` names
        // Ascend910-1, which the kubelet gave nobody but Volcano may have mounted into it.
        expect(selection.evict).toEqual([holder, other, silent]);
        expect(selection.unknownAllocation).toEqual(['default/silent']);
      });
    });
  });
});
