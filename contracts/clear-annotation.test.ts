import { describe, expect, it } from '@jest/globals';
import { CLEAR_ANNOTATION, formatClear, parseClear } from './clear-annotation.js';

describe('npu-fault.io/clear', () => {
  it('reads all, empty, and device lists', () => {
    expect(parseClear('all')).toEqual({ all: true });
    expect(parseClear('')).toEqual({ all: true });
    expect(parseClear(' npu3, 0000:C4:00.0 ')).toEqual({ all: false, devices: ['npu3', '0000:C4:00.0'] });
    expect(parseClear('npu3,,npu4')).toEqual({
      error: expect.stringMatching(/^npu-fault.io\/clear: /) as unknown,
    });
  });

  it('refuses an empty item or a device longer than 256 characters, in one line', () => {
    expect(parseClear('npu3,,npu4')).toEqual({
      error: `${CLEAR_ANNOTATION}: expected "all" or a comma-separated list of device ids`,
    });
    expect(parseClear('x'.repeat(256))).toEqual({ all: false, devices: ['x'.repeat(256)] });
    expect(parseClear(`npu3,${'x'.repeat(257)}`)).toHaveProperty('error');
  });

  it('writes what it reads', () => {
    expect(formatClear({ all: true })).toBe('all');
    expect(formatClear({ all: false, devices: ['npu3', '0000:C4:00.0'] })).toBe('npu3,0000:C4:00.0');
    for (const text of ['all', 'npu3', 'npu3,npu4']) {
      const request = parseClear(text);
      if ('error' in request) throw new Error(request.error);
      expect(formatClear(request)).toBe(text);
    }
  });
});
