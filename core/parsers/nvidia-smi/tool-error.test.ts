import { describe, expect, it } from '@jest/globals';
import { ToolError } from '../common.js';
import { parseNvidiaSmi } from './detect.js';

function caught(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

describe('tool errors', () => {
  it.each([
    [
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
      [],
    ],
    [
      'Unable to determine the device handle for GPU 0000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU\nUnable to determine the device handle for GPU 0000:5E:00.0: GPU is lost.  Reboot the system to recover this GPU',
      ['0000:3B:00.0', '0000:5E:00.0'],
    ],
    ['Unknown Error', []],
    ['No devices were found', []],
  ])('%s', (text, lost) => {
    const error = caught(() => parseNvidiaSmi(text));
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).line).toBe(1);
    expect((error as ToolError).lostBusIds).toEqual(lost);
  });
});
