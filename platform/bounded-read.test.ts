import { describe, expect, it } from '@jest/globals';
import { AnswerTooLargeError, readResponseText } from './bounded-read.js';

/** A Response whose body is `chunks`, then more of them for as long as it is read (when `endless`). */
function response(chunks: string[], headers: Record<string, string> = {}, endless = false): Response {
  let sent = 0;
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks[sent] ?? (endless ? chunks.at(-1) : undefined);
      sent++;
      if (next === undefined) controller.close();
      else controller.enqueue(encoder.encode(next));
    },
  });
  return new Response(body, { headers });
}

describe('readResponseText', () => {
  it('reads an answer within the cap, UTF-8 split across chunks included', async () => {
    const bytes = new TextEncoder().encode('é');
    const split = new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes.subarray(0, 1));
          controller.enqueue(bytes.subarray(1));
          controller.close();
        },
      }),
    );
    await expect(readResponseText(split, 2)).resolves.toBe('é');
    await expect(readResponseText(response(['ab', 'cd']), 4)).resolves.toBe('abcd');
  });

  it('refuses a body that grows past the cap, and stops reading it', async () => {
    const endless = response(['0123456789'], {}, true);
    await expect(readResponseText(endless, 1000)).rejects.toThrow(AnswerTooLargeError);
    expect(endless.bodyUsed).toBe(true);
  });

  it('refuses a declared Content-Length over the cap before reading', async () => {
    await expect(readResponseText(response(['x'], { 'content-length': '5000' }), 1000)).rejects.toThrow(
      'the answer is over 1000 bytes',
    );
  });
});
