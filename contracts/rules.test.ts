import { describe, expect, it } from '@jest/globals';
import {
  DEFAULT_FAULT_CODES,
  DEFAULT_RULES,
  MAX_NODE_CONDITIONS,
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
      node_problems: {
        'network-unreachable': 'critical',
        'nic-link-down': 'critical',
        'rdma-port-down': 'critical',
        'nvlink-down': 'critical',
        'host-memory-ecc': 'warning',
        'kernel-machine-check': 'critical',
        'kernel-soft-lockup': 'critical',
        'kernel-hung-task': 'warning',
        'oom-kill-storm': 'warning',
        'filesystem-readonly': 'critical',
        'filesystem-error': 'warning',
        'filesystem-full': 'warning',
        'host-hardware-fault': 'critical',
        'host-hardware-warning': 'warning',
      },
      node_conditions: [
        { type: 'KernelDeadlock', status: 'True', reason: 'kernel-deadlock', severity: 'critical' },
        { type: 'ReadonlyFilesystem', status: 'True', reason: 'readonly-filesystem', severity: 'critical' },
        { type: 'MemoryPressure', status: 'True', reason: 'node-memory-pressure', severity: 'warning' },
        { type: 'DiskPressure', status: 'True', reason: 'node-disk-pressure', severity: 'warning' },
        { type: 'PIDPressure', status: 'True', reason: 'node-pid-pressure', severity: 'warning' },
        {
          type: 'FrequentKubeletRestart',
          status: 'True',
          reason: 'frequent-kubelet-restart',
          severity: 'warning',
        },
        {
          type: 'FrequentDockerRestart',
          status: 'True',
          reason: 'frequent-docker-restart',
          severity: 'warning',
        },
        {
          type: 'FrequentContainerdRestart',
          status: 'True',
          reason: 'frequent-containerd-restart',
          severity: 'warning',
        },
      ],
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

  it('maps Node conditions to node reasons, refusing bad entries with one line naming the field', () => {
    const rules = rulesSchema.parse({
      node_conditions: [{ type: 'GPUFallenOff', reason: 'gpu-fallen-off' }],
    });
    expect(rules.node_conditions).toEqual([
      { type: 'GPUFallenOff', status: 'True', reason: 'gpu-fallen-off', severity: 'critical' },
    ]);
    expect(rulesSchema.parse({ node_conditions: [] }).node_conditions).toEqual([]);
    const entry = { type: 'KernelDeadlock', reason: 'kernel-deadlock' };
    const refused: [unknown[], string, RegExp][] = [
      [[{ ...entry, reason: 'Kernel_Deadlock' }], 'node_conditions/0/reason', /must match/],
      [[{ ...entry, reason: 'node-not-ready' }], 'node_conditions/0/reason', /reason of the catalogue/],
      [[{ ...entry, reason: 'xid-79' }], 'node_conditions/0/reason', /reason of the catalogue/],
      [[entry, { ...entry, type: 'Other' }], 'node_conditions/1/reason', /also node_conditions\[0\]/],
      [
        [entry, { ...entry, reason: 'other' }],
        'node_conditions/1/type',
        /KernelDeadlock=True is mapped twice/,
      ],
      [[{ ...entry, type: 'Ready' }], 'node_conditions/0/type', /may not be Ready/],
      [[{ ...entry, type: 'has space' }], 'node_conditions/0/type', /condition type/],
      [[{ ...entry, status: 'true' }], 'node_conditions/0/status', /True/],
      [[{ ...entry, severity: 'info' }], 'node_conditions/0/severity', /critical/],
      [[{ ...entry, colour: 'red' }], 'node_conditions/0', /colour/],
      [
        Array.from({ length: MAX_NODE_CONDITIONS + 1 }, (_, i) => ({ type: `T${i}`, reason: `r${i}` })),
        'node_conditions',
        new RegExp(`<=${MAX_NODE_CONDITIONS}\\b`),
      ],
    ];
    for (const [node_conditions, path, message] of refused) {
      const result = rulesSchema.safeParse({ node_conditions });
      expect(result.success).toBe(false);
      const issue = result.error?.issues[0];
      expect(issue?.path.join('/')).toBe(path);
      expect(JSON.stringify(issue)).toMatch(message);
    }
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
