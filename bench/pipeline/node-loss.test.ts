import { describe, expect, it } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';
import {
  KUBELET_HEARTBEAT_DEFAULTS,
  heartbeatTiming,
  leaseRenewPatch,
  nodeLeaseBody,
  notReadyWindowMs,
  readyOf,
  readyStatusPatch,
} from './node-loss.js';

const T = Date.parse('2026-12-01T12:00:00.123Z');

describe('heartbeatTiming', () => {
  it("is the kubelet's: a 40 s Lease renewed every quarter of it, status re-posted every 5 min", () => {
    expect(heartbeatTiming()).toEqual({
      leaseDurationSeconds: 40,
      renewIntervalSeconds: 10,
      statusReportIntervalSeconds: 300,
    });
    expect(KUBELET_HEARTBEAT_DEFAULTS.renewIntervalSeconds * 4).toBe(
      KUBELET_HEARTBEAT_DEFAULTS.leaseDurationSeconds,
    );
  });

  it('takes what it is given', () => {
    expect(heartbeatTiming({ renewIntervalSeconds: 2, leaseDurationSeconds: 8 })).toEqual({
      leaseDurationSeconds: 8,
      renewIntervalSeconds: 2,
      statusReportIntervalSeconds: 300,
    });
  });

  it('refuses a renewal no sooner than the Lease expires, and non-positive or fractional values, naming the field', () => {
    expect(() => heartbeatTiming({ renewIntervalSeconds: 40 })).toThrow(
      /^renewIntervalSeconds: must be shorter/,
    );
    expect(() => heartbeatTiming({ renewIntervalSeconds: 0 })).toThrow(
      /^renewIntervalSeconds: expected a positive/,
    );
    expect(() => heartbeatTiming({ statusReportIntervalSeconds: Number.NaN })).toThrow(
      /^statusReportIntervalSeconds:/,
    );
    expect(() => heartbeatTiming({ leaseDurationSeconds: 7.5, renewIntervalSeconds: 1 })).toThrow(
      /^leaseDurationSeconds: expected whole seconds/,
    );
  });
});

describe('the Lease', () => {
  it('is held by the node, owned by its Node, in kube-node-lease', () => {
    const lease = nodeLeaseBody({ name: 'n1', uid: 'u-1' }, 40, T);
    expect(lease.metadata).toEqual({
      name: 'n1',
      namespace: 'kube-node-lease',
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'u-1' }],
    });
    expect(lease.spec?.holderIdentity).toBe('n1');
    expect(lease.spec?.leaseDurationSeconds).toBe(40);
  });

  it('carries renewTime with the six fractional digits the apiserver requires, on create and on renewal', () => {
    expect(JSON.stringify(nodeLeaseBody({ name: 'n1', uid: 'u' }, 40, T).spec?.renewTime)).toBe(
      '"2026-12-01T12:00:00.123000Z"',
    );
    expect(leaseRenewPatch('n1', 40, T)).toEqual({
      spec: { holderIdentity: 'n1', leaseDurationSeconds: 40, renewTime: '2026-12-01T12:00:00.123000Z' },
    });
  });
});

describe('readyStatusPatch', () => {
  it('says Ready=True with a fresh heartbeat and the time it became ready, and no pressure', () => {
    const since = T - 60_000;
    const patch = readyStatusPatch(T, since) as { status: { conditions: k8s.V1NodeCondition[] } };
    const byType = new Map(patch.status.conditions.map((c) => [c.type, c]));
    expect([...byType.keys()].sort()).toEqual(['DiskPressure', 'MemoryPressure', 'PIDPressure', 'Ready']);
    expect(byType.get('Ready')).toMatchObject({
      status: 'True',
      reason: 'KubeletReady',
      lastHeartbeatTime: new Date(T).toISOString(),
      lastTransitionTime: new Date(since).toISOString(),
    });
    for (const type of ['DiskPressure', 'MemoryPressure', 'PIDPressure'])
      expect(byType.get(type)?.status).toBe('False');
  });
});

describe('readyOf', () => {
  const node = (conditions?: k8s.V1NodeCondition[]): k8s.V1Node => ({ status: { conditions } });

  it("reads the Ready condition's status, reason and transition time", () => {
    const lastTransitionTime = new Date(T);
    expect(
      readyOf(
        node([
          { type: 'MemoryPressure', status: 'False' },
          { type: 'Ready', status: 'Unknown', reason: 'NodeStatusUnknown', lastTransitionTime },
        ]),
      ),
    ).toEqual({ status: 'Unknown', reason: 'NodeStatusUnknown', since: T });
  });

  it('says Missing for a Node that has no Ready condition (yet)', () => {
    expect(readyOf(node())).toEqual({ status: 'Missing', reason: '', since: undefined });
    expect(readyOf(node([{ type: 'DiskPressure', status: 'False' }])).status).toBe('Missing');
  });
});

describe('notReadyWindowMs', () => {
  it('spans grace − one renew interval to grace + one monitor period after the stop', () => {
    expect(notReadyWindowMs({ gracePeriodSeconds: 50, renewIntervalSeconds: 10 })).toEqual({
      fromStop: { min: 40_000, max: 55_000 },
      fromLastHeartbeat: { min: 50_000, max: 55_000 },
    });
    expect(
      notReadyWindowMs({ gracePeriodSeconds: 8, renewIntervalSeconds: 2, monitorPeriodSeconds: 1 }),
    ).toEqual({
      fromStop: { min: 6_000, max: 9_000 },
      fromLastHeartbeat: { min: 8_000, max: 9_000 },
    });
  });

  it('never starts before the stop', () => {
    expect(notReadyWindowMs({ gracePeriodSeconds: 5, renewIntervalSeconds: 10 }).fromStop.min).toBe(0);
  });
});
