import { describe, expect, it } from '@jest/globals';
import { ConfigError } from '../../platform/index.js';
import { parseRemediationConfig } from './config.js';
import { parseRemediationText } from './config-watch.js';

describe('remediation settings', () => {
  it('are off by default, with the documented safety defaults', () => {
    const config = parseRemediationConfig();
    expect(config).toMatchObject({
      mode: 'off',
      dryRun: false,
      taint: true,
      maxConcurrent: 1,
      trigger: { minDevices: 1, statuses: ['failed'], reasons: [] },
      thermalEviction: { enabled: false, forSeconds: 120 },
      breaker: { maxUnhealthyPercent: 10, windowSeconds: 600 },
      uncordon: { enabled: false, holdSeconds: 300 },
      drain: { delaySeconds: 0, podTimeoutSeconds: 120, timeoutSeconds: 600, perDevice: false },
    });
    expect(config.breaker.autoResetSeconds).toBeUndefined();
    expect(config.drain.forceDeleteAfterSeconds).toBeUndefined();
  });

  it('refuse bad values with one line naming the field', () => {
    expect(() => parseRemediationConfig({ mode: 'evict' })).toThrow(ConfigError);
    expect(() => parseRemediationConfig({ breaker: { maxUnhealthyPercent: 140 } })).toThrow(
      /^remediation\.breaker\.maxUnhealthyPercent: /,
    );
    expect(() => parseRemediationConfig({ drain: { timeout: 5 } })).toThrow(/^remediation\.drain: /);
    expect(() => parseRemediationConfig({ drain: { forceDeleteAfterSeconds: 600 } })).toThrow(
      'remediation.drain.forceDeleteAfterSeconds: must be less than timeoutSeconds (600)',
    );
    expect(() => parseRemediationConfig({ thermalEviction: { forSeconds: -5 } })).toThrow(
      /^remediation\.thermalEviction\.forSeconds: /,
    );
    expect(() => parseRemediationConfig({ thermalEviction: { forSeconds: 7200 } })).toThrow(
      /^remediation\.thermalEviction\.forSeconds: Too big/,
    );
    // The threshold is the rules' (high_temp.threshold_c): a preset one is refused, not ignored.
    expect(() => parseRemediationConfig({ thermalEviction: { enabled: true, thresholdC: 90 } })).toThrow(
      /^remediation\.thermalEviction: .*thresholdC/,
    );
    expect(() => parseRemediationConfig({ thermalEviction: { enabled: 'yes' } })).toThrow(
      /^remediation\.thermalEviction\.enabled: /,
    );
    expect(() => parseRemediationConfig({ optOutLabel: 'example.com/no-heal=true' })).toThrow(
      /^remediation\.optOutLabel: must be a label under npu-fault\.io\//,
    );
  });

  it('read from the ConfigMap: YAML, errors with key, line and field', () => {
    const where = 'ai-infra/npu-fault-remediation/remediation.yaml';
    expect(parseRemediationText('mode: drain\ndrain:\n  delaySeconds: 30\n', where).config).toMatchObject({
      mode: 'drain',
      drain: { delaySeconds: 30, timeoutSeconds: 600 },
    });
    expect(parseRemediationText('mode: drain\ndrain:\n  delaySeconds: -1\n', where).error).toBe(
      `${where}:3: drain.delaySeconds: Too small: expected number to be >=0`,
    );
    expect(
      parseRemediationText('mode: drain\nthermalEviction:\n  enabled: true\n  forSeconds: 90\n', where)
        .config,
    ).toMatchObject({ thermalEviction: { enabled: true, forSeconds: 90 } });
    expect(parseRemediationText('thermalEviction:\n  enabled: true\n  forSeconds: -1\n', where).error).toBe(
      `${where}:3: thermalEviction.forSeconds: Too small: expected number to be >=0`,
    );
    expect(parseRemediationText('mode: [', where).error).toMatch(new RegExp(`^${where}:1`));
    expect(parseRemediationText('- 1\n', where).error).toMatch(
      /^ai-infra\/npu-fault-remediation\/remediation\.yaml/,
    );
    expect(parseRemediationText('__proto__: {}\n', where).error).toBeDefined();
  });
});
