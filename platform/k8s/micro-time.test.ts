import { describe, expect, it } from '@jest/globals';
import { microTime } from './micro-time.js';

describe('microTime', () => {
  it('writes six fractional digits and reads back the same instant', () => {
    const t = microTime(Date.parse('2026-11-29T08:23:45.123Z'));
    expect(t.toISOString()).toBe('2026-11-29T08:23:45.123000Z');
    expect(JSON.stringify({ t })).toBe('{"t":"2026-11-29T08:23:45.123000Z"}');
    expect(Date.parse(t.toISOString())).toBe(t.getTime());
  });
});
