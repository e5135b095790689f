import { describe, expect, it } from '@jest/globals';
import { formatBytes, joinProblemParts, nameOf, plural } from './problem-message.js';

describe('joinProblemParts', () => {
  it('joins parts with "; " when they fit', () => {
    expect(joinProblemParts(['eth2 down', 'eth3 gone'])).toBe('eth2 down; eth3 gone');
    expect(joinProblemParts([])).toBe('');
  });

  it('keeps what fits within the bound and counts the rest', () => {
    const parts = Array.from({ length: 10 }, (_, i) => `part-${i}`);
    const message = joinProblemParts(parts, 40);
    expect(message).toBe('part-0; part-1; part-2; part-3 (+6 more)');
    expect(message.length).toBeLessThanOrEqual(40);
  });

  it('cuts a first part too long by itself, still counting the rest', () => {
    const message = joinProblemParts(['x'.repeat(300), 'y'], 50);
    expect(message.length).toBeLessThanOrEqual(50);
    expect(message).toMatch(/^x+… \(\+1 more\)$/);
    expect(joinProblemParts(['z'.repeat(300)], 20)).toBe(`${'z'.repeat(19)}…`);
  });

  it('stays within 256 characters for any number of long parts', () => {
    for (let n = 1; n < 40; n++) {
      const parts = Array.from({ length: n }, (_, i) => `${'w'.repeat(i * 7)} ${i}`);
      expect(joinProblemParts(parts).length).toBeLessThanOrEqual(256);
    }
  });
});

describe('message helpers', () => {
  it('escapes control characters in names read from the node', () => {
    expect(nameOf('eth\n2\u0007')).toBe('eth\\n2\\u0007');
  });
  it('counts words and bytes for a person', () => {
    expect(plural(1, 'error')).toBe('1 error');
    expect(plural(2, 'loss', 'losses')).toBe('2 losses');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(3.2 * 1024 ** 3)).toBe('3.2 GiB');
  });
});
