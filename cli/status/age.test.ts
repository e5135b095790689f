import { describe, expect, it } from '@jest/globals';
import { formatAge } from './age.js';

describe('ages', () => {
  it('formats ages', () => {
    expect([
      formatAge(1234),
      formatAge(-5),
      formatAge(42_000),
      formatAge(600_000),
      formatAge(7_200_000),
    ]).toEqual(['1.2 s', '0.0 s', '42 s', '10 min', '2 h']);
  });
});
