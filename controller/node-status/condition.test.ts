import { describe, expect, it } from '@jest/globals';
import type { PublishedDevice, PublishedNode } from '../../contracts/index.js';
import { MAX_MESSAGE, desiredCondition, sameCondition } from './condition.js';

function device(id: string, status: PublishedDevice['status'], reason: string | null): PublishedDevice {
  return {
    id,
    key: id,
    resource_id: id,
    kind: 'npu',
    model: '910B',
    status,
    since: '2026-12-01T00:00:00.000Z',
    reason,
    reasons: reason ? [reason] : [],
    signals: [],
    temperature_c: null,
    power_w: null,
    ecc_errors: null,
    pcie_link_status: null,
  };
}

function entry(npus: PublishedDevice[], agent: PublishedNode['agent'] = 'ok'): PublishedNode {
  return {
    node: 'n1',
    observed_at: '2026-12-01T00:00:00.000Z',
    agent,
    summary: { total: 8, healthy: 8 - npus.length, degraded: 0, failed: 0, unknown: 0 },
    npus,
  };
}

describe('desiredCondition', () => {
  it('is True for a healthy node', () => {
    expect(desiredCondition(null)).toEqual({
      status: 'True',
      reason: 'AllDevicesHealthy',
      message: 'all devices healthy',
    });
    expect(desiredCondition(entry([device('npu1', 'healthy', null)])).reason).toBe('AllDevicesHealthy');
  });

  it('is False naming every failed device and its reason', () => {
    const c = desiredCondition(
      entry([device('npu1', 'failed', 'pcie-link-down'), device('npu4', 'failed', 'ecc-uncorrectable')]),
    );
    expect(c).toEqual({
      status: 'False',
      reason: 'DeviceFailed',
      message: '2 of 8 devices failed: npu1 (pcie-link-down), npu4 (ecc-uncorrectable)',
    });
  });

  it('stays False under an overlay: a failed device beats an unknown one', () => {
    const c = desiredCondition(
      entry(
        [device('npu1', 'failed', 'npu-offline'), device('npu2', 'unknown', 'agent-unreachable')],
        'stale',
      ),
    );
    expect(c.status).toBe('False');
  });

  it('is Unknown under an overlay, naming it', () => {
    expect(desiredCondition(entry([device('npu2', 'unknown', 'agent-unreachable')], 'stale'))).toMatchObject({
      status: 'Unknown',
      reason: 'AgentUnreachable',
    });
    expect(desiredCondition(entry([device('npu2', 'unknown', 'node-not-ready')])).reason).toBe(
      'NodeNotReady',
    );
    expect(desiredCondition(entry([], 'collector-error')).reason).toBe('CollectorError');
  });

  it('is True with DeviceDegraded for degraded devices', () => {
    expect(desiredCondition(entry([device('npu3', 'degraded', 'high-temp')]))).toMatchObject({
      status: 'True',
      reason: 'DeviceDegraded',
    });
  });

  it('bounds the message', () => {
    const many = Array.from({ length: 300 }, (_, i) => device(`npu${i}`, 'failed', 'device-missing'));
    expect(desiredCondition(entry(many)).message.length).toBe(MAX_MESSAGE);
  });

  it('sameCondition compares status, reason and message', () => {
    const d = desiredCondition(null);
    expect(sameCondition(undefined, d)).toBe(false);
    expect(sameCondition({ ...d }, d)).toBe(true);
    expect(sameCondition({ ...d, message: 'x' }, d)).toBe(false);
  });
});
