import { describe, expect, it } from '@jest/globals';
import { decodeLatched, encodeLatched } from './annotations.js';

const record = {
  key: '0000:C4:00.0',
  id: 'npu3',
  resource_id: 'Ascend910-3',
  kind: 'npu' as const,
  model: '910B3',
  reasons: ['ecc-uncorrectable'],
  since: '2026-12-01T00:00:04.000Z',
  ecc_errors: 9,
  ecc_uncorrectable: 2,
};

describe('npu-fault.io/latched', () => {
  it('round-trips, and no records means no annotation', () => {
    expect(decodeLatched(encodeLatched([record]) ?? undefined)).toEqual({ records: [record] });
    expect(encodeLatched([])).toBeNull();
    expect(decodeLatched(undefined)).toEqual({ records: [] });
  });

  it('refuses what someone else wrote, in one line naming the annotation and field', () => {
    expect(decodeLatched('{')).toEqual({ error: 'npu-fault.io/latched: not JSON' });
    expect(decodeLatched('{}').error).toMatch(/^npu-fault.io\/latched: /);
    const bad = decodeLatched(JSON.stringify([{ ...record, ecc_errors: -1 }]));
    expect(bad.error).toMatch(/^npu-fault.io\/latched\/0\/ecc_errors: /);
    expect(decodeLatched(JSON.stringify([{ ...record, __proto__x: 1 }])).error).toMatch(/latched\/0/);
    expect(bad.error).not.toContain('\n');
  });
});
