import { describe, expect, it } from '@jest/globals';
import { memoryLogger } from '../probe/testing.js';
import { FailureSpells } from './failure-spells.js';

describe('FailureSpells', () => {
  it('logs the first failure of a spell at warn and its end at info, per source', () => {
    const { log, lines } = memoryLogger();
    const spells = new FailureSpells(log);
    expect(spells.fail('net', { error: 'EACCES' }, 'cannot list net')).toBe(true);
    expect(spells.fail('net', { error: 'EACCES' }, 'cannot list net')).toBe(false);
    expect(spells.fail('infiniband', {}, 'cannot list infiniband')).toBe(true);
    expect(spells.failing('net')).toBe(true);
    spells.succeed('net', 'net listed again');
    spells.succeed('net', 'net listed again');
    spells.succeed('never-failed');
    expect(lines.map((l) => [l.level, l.source, l.msg])).toEqual([
      ['warn', 'net', 'cannot list net'],
      ['warn', 'infiniband', 'cannot list infiniband'],
      ['info', 'net', 'net listed again'],
    ]);
    expect(spells.fail('net', {}, 'cannot list net')).toBe(true);
  });
});
