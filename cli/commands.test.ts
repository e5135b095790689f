import { describe, expect, it } from '@jest/globals';
import { helpText, main } from './main.js';
import { memoryIO } from './testing.js';

describe('the development commands in a checkout', () => {
  it('loads `demo` from stack/ through the command table', async () => {
    const io = memoryIO();
    expect(await main(['demo', '--engine-only', '--fast'], io)).toBe(0);
    expect(io.out).toMatch(/Scenario check: all \d+ devices behaved as labelled/);
  });

  it('marks `demo` and `bench` in the help as commands of a checkout', () => {
    const help = helpText();
    expect(help).toMatch(/^ {2}demo .*\(development: from a checkout\)$/m);
    expect(help).toMatch(/^ {2}bench .*\(development: from a checkout\)$/m);
    expect(help).not.toMatch(/^ {2}replay .*development/m);
  });
});
