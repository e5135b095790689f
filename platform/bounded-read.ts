/**
 * Reading an HTTP answer with a size cap: what a component reads from a peer (the ingest
 * function's answer, a controller's, an inference server's) is bounded, so a broken or hostile
 * peer cannot grow the reader's memory by answering without end.
 */

/** The answer was larger than the reader takes. */
export class AnswerTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the answer is over ${maxBytes} bytes`);
    this.name = 'AnswerTooLargeError';
  }
}

/**
 * The body of a fetch `Response` as UTF-8 text, of at most `maxBytes`; past that the body is
 * cancelled and AnswerTooLargeError thrown. A declared Content-Length over the cap is refused
 * before any byte is read.
 */
export async function readResponseText(response: Response, maxBytes: number): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw new AnswerTooLargeError(maxBytes);
  }
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let received = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    received += value.byteLength;
    if (received > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new AnswerTooLargeError(maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
