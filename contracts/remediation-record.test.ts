import { describe, expect, it } from '@jest/globals';
import { decodeNodeRecord, encodeNodeRecord, type NodeRecord } from './remediation-record.js';

const record: NodeRecord = {
  phase: 'cordoned',
  by: 'controller-0',
  term: 3,
  since: '2026-12-01T10:00:00.000Z',
  reason: 'npu3: pcie-link-down',
  devices: ['Ascend910-3'],
  tainted: true,
  drainStartedAt: null,
  drainFinishedAt: null,
  blocking: [],
  recoveredAt: null,
  releasedAt: null,
};

describe('npu-fault.io/remediation', () => {
  it('is compact JSON in the schema order (what Nodes already carry)', () => {
    expect(encodeNodeRecord(record)).toBe(
      '{"phase":"cordoned","by":"controller-0","term":3,"since":"2026-12-01T10:00:00.000Z",' +
        '"reason":"npu3: pcie-link-down","devices":["Ascend910-3"],"tainted":true,"drainStartedAt":null,' +
        '"drainFinishedAt":null,"blocking":[],"recoveredAt":null,"releasedAt":null}',
    );
    expect(decodeNodeRecord(encodeNodeRecord(record))).toEqual({ value: record });
  });

  it('refuses what someone else wrote, in one line naming the annotation and field', () => {
    expect(decodeNodeRecord('{')).toEqual({ error: 'npu-fault.io/remediation: not JSON' });
    const bad = decodeNodeRecord(JSON.stringify({ ...record, phase: 'gone' })).error;
    expect(bad).toMatch(/^npu-fault.io\/remediation\/phase: /);
    expect(bad).not.toContain('\n');
    expect(decodeNodeRecord(JSON.stringify({ ...record, extra: 1 })).error).toMatch(
      /^npu-fault.io\/remediation: /,
    );
  });
});
