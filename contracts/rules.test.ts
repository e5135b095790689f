import { describe, expect, it } from '@jest/globals';
import {
  DEFAULT_FAULT_CODES,
  DEFAULT_RULES,
  MAX_WATCHED_XIDS,
  canonicalFaultCode,
  rulesSchema,
} from './index.js';

describe('rules contract defaults (CONTRACT §2)', () => {
  it('declares every default of the contract', () => {
    expect(DEFAULT_RULES).toEqual({
      window_samples: 5,
      high_temp: { threshold_c: 85.0, min_samples: 3 },
      ecc_thermal_c: 75.0,
      offline_power_w: 5.0,
      degrade_after_s: 60,
      fail_after_degraded_s: 180,
      recover_after_samples: 5,
      overlays: { agent_unreachable_s: 5, collector_error_s: 10 },
      future_skew_s: 5,
      max_devices_per_node: 32,
      xids: { watched: [48, 63, 64, 74, 79, 92, 94, 95, 119, 120], critical: [48, 74, 79, 95, 119, 120] },
      latched: ['ecc-uncorrectable', 'xid-48', 'xid-79', 'xid-95', 'xid-119', 'xid-120'],
      inference_canary: { min_failures: 2, severity: 'warning', fail_after_degraded: false },
      fault_codes: {},
      fault_codes_default: 'warning',
      publish: { ingest_degraded_fraction: 0.2, ingest_degraded_min_nodes: 3, max_bytes: 921600 },
    });
  });

  it('carries the default Ascend fault-code table', () => {
    expect(DEFAULT_FAULT_CODES).toEqual({
      '80E01801': 'critical',
      '80E18402': 'critical',
      '80E0020B': 'critical',
      '80B98000': 'critical',
      '40F84E00': 'critical',
      '80E00209': 'warning',
      '80E20207': 'warning',
      '80DE0207': 'warning',
      '81078603': 'warning',
    });
  });

  it('rejects unknown fields and too many XIDs', () => {
    expect(rulesSchema.safeParse({ colour: 'red' }).success).toBe(false);
    expect(
      rulesSchema.safeParse({ xids: { watched: Array.from({ length: 21 }, (_, i) => i), critical: [] } })
        .success,
    ).toBe(false);
  });

  it('watches as many XIDs as fit beside the fixed reasons in one 32-bit mask', () => {
    const watched = Array.from({ length: MAX_WATCHED_XIDS }, (_, i) => i);
    expect(rulesSchema.safeParse({ xids: { watched, critical: [] } }).success).toBe(true);
  });

  it('takes the canary rule, refusing a count below 1 and unknown keys', () => {
    expect(rulesSchema.parse({ inference_canary: { severity: 'critical' } }).inference_canary).toEqual({
      min_failures: 2,
      severity: 'critical',
      fail_after_degraded: false,
    });
    for (const inference_canary of [
      { min_failures: 0 },
      { min_failures: 1.5 },
      { severity: 'info' },
      { x: 1 },
    ]) {
      expect(rulesSchema.safeParse({ inference_canary }).success).toBe(false);
    }
    expect(rulesSchema.safeParse({ latched: ['inference-canary-failed'] }).success).toBe(true);
  });

  it('stores fault codes canonical: upper-case, without 0x, leading zeros kept', () => {
    const rules = rulesSchema.parse({ fault_codes: { '0x80e0': 'critical', '0000abcd': 'warning' } });
    expect(rules.fault_codes).toEqual({ '80E0': 'critical', '0000ABCD': 'warning' });
    expect(canonicalFaultCode('0X00ff')).toBe('00FF');
  });

  it('refuses two keys naming the same code, at the second as written', () => {
    const result = rulesSchema.safeParse({
      fault_codes: { '80e01801': 'critical', '0x80E01801': 'warning' },
    });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(['fault_codes', '0x80E01801']);
  });

  it('refuses a fault code that is not 1-16 hex digits', () => {
    for (const code of ['', '0x', 'zz', '80E0 1801', '1'.repeat(17), '0x0x80']) {
      expect(rulesSchema.safeParse({ fault_codes: { [code]: 'critical' } }).success).toBe(false);
    }
  });
});
