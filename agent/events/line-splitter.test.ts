import { describe, expect, it } from '@jest/globals';
import { LineSplitter } from './line-splitter.js';

function split(chunks: Buffer[], maxPending?: number): string[] {
  const lines: string[] = [];
  const splitter = new LineSplitter((line) => lines.push(line), maxPending);
  for (const chunk of chunks) splitter.push(chunk);
  return lines;
}

describe('LineSplitter', () => {
  it('joins a line cut across chunks, and keeps the last partial line back', () => {
    expect(split([Buffer.from('ab'), Buffer.from('c\nde'), Buffer.from('f\n\ng')])).toEqual([
      'abc',
      'def',
      '',
    ]);
  });

  it('keeps a multi-byte character cut between chunks whole', () => {
    const bytes = Buffer.from('é€\n');
    expect(split([bytes.subarray(0, 1), bytes.subarray(1, 3), bytes.subarray(3)])).toEqual(['é€']);
  });

  it('hands on a line that never ends in pieces of the bound', () => {
    expect(split([Buffer.from('x'.repeat(10))], 4)).toEqual(['xxxx', 'xxxx']);
  });

  it('reset forgets the partial line', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line));
    splitter.push(Buffer.from('old'));
    splitter.reset();
    splitter.push(Buffer.from('new\n'));
    expect(lines).toEqual(['new']);
  });
});
