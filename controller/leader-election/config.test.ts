import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { describeConfig } from '../../platform/index.js';
import { leaderElectionConfigSchema, parseLeaderElectionConfig } from './config.js';

describe('parseLeaderElectionConfig', () => {
  it("fills client-go's defaults and the controller's lease", () => {
    expect(parseLeaderElectionConfig()).toEqual({
      namespace: 'ai-infra',
      name: 'npu-fault-controller',
      durationSeconds: 15,
      renewDeadlineSeconds: 10,
      retryPeriodSeconds: 2,
      releaseOnCancel: true,
    });
  });

  it('accepts short test timings (3 s lease, 2 s deadline, 0.5 s retry)', () => {
    const config = parseLeaderElectionConfig({
      durationSeconds: 3,
      renewDeadlineSeconds: 2,
      retryPeriodSeconds: 0.5,
    });
    expect(config.retryPeriodSeconds).toBe(0.5);
  });

  it.each([
    [
      'a deadline not below the lease duration',
      { durationSeconds: 10 },
      'lease.renewDeadlineSeconds: must be less than durationSeconds (10)',
    ],
    [
      'a deadline within 1.2 retry periods',
      { retryPeriodSeconds: 9 },
      'lease.renewDeadlineSeconds: must be more than 1.2 × retryPeriodSeconds',
    ],
    [
      'a fractional lease duration (the Lease stores whole seconds)',
      { durationSeconds: 15.5 },
      'lease.durationSeconds:',
    ],
    ['a zero retry period', { retryPeriodSeconds: 0 }, 'lease.retryPeriodSeconds:'],
    ['an invalid Lease name', { name: 'Not_Valid' }, 'lease.name: must be a DNS subdomain'],
    ['an invalid namespace', { namespace: 'a.b' }, 'lease.namespace: must be a DNS label'],
    ['an unknown field', { leaseDuration: 15 }, 'leaseDuration'],
  ])('refuses %s, naming the field', (_name, input, message) => {
    expect(() => parseLeaderElectionConfig(input as never)).toThrow(message);
  });

  it('gives one line per problem', () => {
    try {
      parseLeaderElectionConfig({ durationSeconds: 0, retryPeriodSeconds: -1 });
      throw new Error('expected a ConfigError');
    } catch (error) {
      expect((error as { lines: string[] }).lines.length).toBeGreaterThanOrEqual(2);
      for (const line of (error as { lines: string[] }).lines) expect(line).toMatch(/^lease\.\w+: /);
    }
  });

  it('nests in a component config as `lease`, giving --lease-duration-seconds and friends', () => {
    const flags = describeConfig(z.object({ lease: leaderElectionConfigSchema })).map((f) => f.flag);
    expect(flags).toEqual([
      'lease-namespace',
      'lease-name',
      'lease-duration-seconds',
      'lease-renew-deadline-seconds',
      'lease-retry-period-seconds',
      'lease-release-on-cancel',
    ]);
  });
});
