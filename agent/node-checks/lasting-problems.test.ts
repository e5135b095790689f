import { describe, expect, it } from '@jest/globals';
import { memoryLogger } from '../probe/testing.js';
import { FailureSpells } from './failure-spells.js';
import { lastingProblems } from './lasting-problems.js';

describe('lastingProblems', () => {
  it('answers the last problems when a round throws or has nothing new, logging a failing spell once', async () => {
    const { log, lines } = memoryLogger();
    const rounds = lastingProblems('links', new FailureSpells(log));
    const down = [{ reason: 'nic-link-down', message: 'eth2 down' }] as const;
    await expect(rounds(async () => down)).resolves.toEqual(down);
    const boom = async (): Promise<never> => {
      throw new Error('boom');
    };
    await expect(rounds(boom)).resolves.toEqual(down);
    await expect(rounds(boom)).resolves.toEqual(down);
    await expect(rounds(async () => undefined)).resolves.toEqual(down);
    await expect(rounds(async () => [])).resolves.toEqual([]);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'links: a round failed; the last problems stand'],
      ['info', 'links: rounds succeed again'],
    ]);
  });
});
