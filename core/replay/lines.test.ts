import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { LineTooLongError, splitLines, type Line } from './lines.js';

async function collect(chunks: Array<Uint8Array | string>, max?: number): Promise<Line[]> {
  async function* source(): AsyncGenerator<Uint8Array | string> {
    yield* chunks;
  }
  const out: Line[] = [];
  for await (const line of splitLines(source(), max)) out.push(line);
  return out;
}

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('splitLines', () => {
  it('splits on LF, drops a CR before it, keeps a last line without LF, numbers from 1', async () => {
    expect(await collect(['a\r\nb\n', '\nc'])).toEqual([
      { text: 'a', line: 1 },
      { text: 'b', line: 2 },
      { text: '', line: 3 },
      { text: 'c', line: 4 },
    ]);
    expect(await collect([])).toEqual([]);
    expect(await collect(['x\n'])).toEqual([{ text: 'x', line: 1 }]);
  });

  it('gives the same lines however the bytes are cut, multi-byte characters included', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 12 }), { maxLength: 8 }),
        fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 6 }),
        async (lines, cuts) => {
          const text = lines.map((l) => l.replaceAll('\n', ' ').replaceAll('\r', ' ')).join('\n');
          const all = bytes(text);
          const chunks: Uint8Array[] = [];
          for (let at = 0, i = 0; at < all.length; i++) {
            const size = cuts[i % cuts.length] as number;
            chunks.push(all.subarray(at, at + size));
            at += size;
          }
          // A final LF ends the last line; it does not start an empty one.
          const expected = text.split('\n');
          if (expected.at(-1) === '') expected.pop();
          expect((await collect(chunks)).map((l) => l.text)).toEqual(expected);
        },
      ),
    );
  });

  it('refuses a line over the limit with its number, without holding the rest', async () => {
    const chunks = ['ok\n', 'x'.repeat(40), 'y'.repeat(40), '\nnever'];
    await expect(collect(chunks, 64)).rejects.toThrow(LineTooLongError);
    await expect(collect(chunks, 64)).rejects.toMatchObject({ line: 2 });
  });

  it('copies a partial chunk, so a stream reusing its buffer cannot corrupt a line', async () => {
    const buffer = bytes('abc');
    async function* reused(): AsyncGenerator<Uint8Array> {
      yield buffer;
      buffer.set(bytes('zzz'));
      yield bytes('\n');
    }
    const out: string[] = [];
    for await (const line of splitLines(reused())) out.push(line.text);
    expect(out).toEqual(['abc']);
  });
});
