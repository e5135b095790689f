import { describe, expect, it } from '@jest/globals';
import { ConfigError } from '../../platform/index.js';
import { DEFAULT_ACCELERATOR_RESOURCES, parseNodeWatchConfig } from './config.js';

describe('node watch config', () => {
  it('fills the defaults', () => {
    expect(parseNodeWatchConfig()).toEqual({
      resourceNames: [
        'huawei.com/Ascend910',
        'huawei.com/Ascend310P',
        'huawei.com/Ascend310',
        'nvidia.com/gpu',
      ],
      labelSelector: '',
      watchdogSeconds: 90,
    });
    expect(DEFAULT_ACCELERATOR_RESOURCES).toHaveLength(4);
  });

  it('accepts a custom list, a selector and a watchdog', () => {
    expect(
      parseNodeWatchConfig({
        resourceNames: ['amd.com/gpu'],
        labelSelector: 'accel in (npu,gpu)',
        watchdogSeconds: 30,
      }),
    ).toEqual({ resourceNames: ['amd.com/gpu'], labelSelector: 'accel in (npu,gpu)', watchdogSeconds: 30 });
  });

  it.each([
    [
      { resourceNames: ['gpu'] },
      'nodes.resourceNames.0: must be an extended resource name such as vendor.com/device',
    ],
    [{ resourceNames: ['Vendor.com/gpu'] }, 'nodes.resourceNames.0: must be an extended resource name'],
    [{ labelSelector: 'a=b,!' }, 'nodes.labelSelector: label selector term 2 "!": expected'],
    [{ watchdogSeconds: 0 }, 'nodes.watchdogSeconds: Too small'],
    [{ unknown: 1 } as never, 'nodes: Unrecognized key: "unknown"'],
  ])('refuses %j with one line naming the field', (input, line) => {
    let error: unknown;
    try {
      parseNodeWatchConfig(input);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).lines).toHaveLength(1);
    expect((error as ConfigError).lines[0]).toContain(line);
  });
});
