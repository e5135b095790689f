/**
 * Reading a JSON request body on a plain node:http handler, as express.json (body-parser 2)
 * read it, without the framework's cost per request: the body is read into one Buffer
 * (inflated first when Content-Encoding says gzip, deflate, br or zstd), at most `limit` bytes
 * after inflating, then decoded by its charset (UTF-8 by default; UTF-16 too) and parsed
 * strictly (the top level an object or an array; an empty body is `{}`).
 *
 * Failures are errors with body-parser's `type` (`entity.too.large`, `encoding.unsupported`,
 * `charset.unsupported`, `entity.parse.failed`, `request.aborted`, `request.size.invalid`),
 * so platform's httpFailureOf answers them exactly as it answered body-parser's. A compressed
 * body that does not inflate is a 400 (`invalid_encoding`), where body-parser let a 500 through.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { AppError } from './errors.js';
import { mayHoldPollutingKey } from './json-body.js';

/** A body error shaped as body-parser's (http-errors): httpFailureOf tells them apart by `type`. */
export class RequestBodyError extends Error {
  readonly status: number;
  constructor(
    readonly type: string,
    status: number,
    message: string,
  ) {
    super(message);
    this.name = 'RequestBodyError';
    this.status = status;
  }
}

/** The raw body of a request, read whole. */
export interface RawRequestBody {
  /** The bytes after any Content-Encoding, a UTF-8 byte order mark left off. */
  raw: Buffer;
  /** The charset they are in, lower-case (`utf-8` unless the Content-Type names another). */
  charset: string;
}

/** The charsets read (body-parser took any `utf-*` iconv-lite knows; UTF-7 and UTF-32 are refused here). */
const CHARSETS: ReadonlySet<string> = new Set(['utf-8', 'utf-16', 'utf-16le', 'utf-16be']);
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * The charset of the body, before it is read: `utf-8` unless the Content-Type's `charset`
 * parameter names another; RequestBodyError `charset.unsupported` (415) for one not read here.
 */
export function requestCharset(headers: IncomingHttpHeaders): string {
  const charset = charsetParameter(headers['content-type']) ?? 'utf-8';
  if (!CHARSETS.has(charset))
    throw new RequestBodyError('charset.unsupported', 415, `unsupported charset "${charset.toUpperCase()}"`);
  return charset;
}

/** Whether the request has a body at all (type-is's hasBody): a Transfer-Encoding or a numeric Content-Length. */
export function hasRequestBody(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || !Number.isNaN(Number(headers['content-length']));
}

/**
 * The request's body, at most `limit` bytes after inflating; undefined when the request has
 * none (hasRequestBody). Checks charset and Content-Encoding before reading anything. On a
 * failure while reading, the rest of the request is read off (as body-parser did) before the
 * promise rejects, so the answer can go out on a connection still usable.
 */
export async function readRequestBody(
  req: IncomingMessage,
  options: { limit: number },
): Promise<RawRequestBody | undefined> {
  if (!hasRequestBody(req.headers)) return undefined;
  const charset = requestCharset(req.headers);
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  const inflate = encoding === 'identity' ? undefined : decompressor(encoding);
  // Its errors are read as the body's while reading; one after that (it is destroyed) is moot.
  inflate?.on('error', () => undefined);
  // raw-body's `length`: the Content-Length of an identity body, when it is a number.
  const length = Number.parseInt(req.headers['content-length'] ?? '', 10);
  const declared = inflate || Number.isNaN(length) ? undefined : length;
  let raw: Buffer;
  try {
    raw = await readBounded(inflate ?? req, req, options.limit, declared);
  } catch (error) {
    if (inflate) {
      req.unpipe(inflate);
      inflate.destroy();
    }
    await readOff(req);
    throw error;
  }
  if (inflate) {
    req.unpipe(inflate);
    inflate.destroy();
    req.resume();
  }
  if (charset === 'utf-8' && raw.subarray(0, 3).equals(UTF8_BOM)) raw = raw.subarray(3);
  return { raw, charset };
}

/**
 * The JSON value of a body read by readRequestBody, parsed as express.json with `strict`:
 * an empty body is `{}`, and the first token must open an object or an array.
 * RequestBodyError `entity.parse.failed` (400) with JSON.parse's message otherwise.
 */
export function parseJsonRequestBody(body: RawRequestBody): unknown {
  const text = decode(body);
  if (text.length === 0) return {};
  const first = FIRST_NON_WHITESPACE.exec(text)?.[1] || undefined;
  if (first !== '{' && first !== '[') throw strictViolation(text, first);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new RequestBodyError('entity.parse.failed', 400, (error as Error).message);
  }
}

/**
 * A body read by readRequestBody (undefined: none) as JSON, and whether it may hold a
 * prototype-polluting key: the raw bytes are searched first, so most bodies are cleared by a
 * byte search and only the others need walking after parsing (findPollutingKey).
 */
export function jsonRequestOf(read: RawRequestBody | undefined): { body: unknown; mayPollute: boolean } {
  if (read === undefined) return { body: undefined, mayPollute: true };
  const mayPollute = mayHoldPollutingKey(read.raw, read.charset);
  return { body: parseJsonRequestBody(read), mayPollute };
}

/** RFC 8259 whitespace, then the first other character. */
// eslint-disable-next-line no-control-regex
const FIRST_NON_WHITESPACE = /^[\x20\x09\x0a\x0d]*([^\x20\x09\x0a\x0d]|$)/;

function decode({ raw, charset }: RawRequestBody): string {
  if (charset === 'utf-8') return raw.toString('utf8');
  // UTF-16 without an explicit order: the byte order mark says, else little-endian (iconv-lite's default).
  const label = charset === 'utf-16' && raw[0] === 0xfe && raw[1] === 0xff ? 'utf-16be' : charset;
  return new TextDecoder(label === 'utf-16' ? 'utf-16le' : label).decode(raw);
}

/** The error JSON.parse gives for the first offending token, as body-parser built it. */
function strictViolation(text: string, first: string | undefined): RequestBodyError {
  const index = first === undefined ? -1 : text.indexOf(first);
  const partial = index === -1 ? '' : text.slice(0, index) + '#'.repeat(text.length - index);
  try {
    JSON.parse(partial);
    return new RequestBodyError('entity.parse.failed', 400, 'strict violation');
  } catch (error) {
    const message = (error as Error).message.replace(/#+/g, (hashes) =>
      text.slice(index, index + hashes.length),
    );
    return new RequestBodyError('entity.parse.failed', 400, message);
  }
}

/** The `charset` parameter of a Content-Type, lower-case; undefined when it names none. */
function charsetParameter(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const semicolon = contentType.indexOf(';');
  if (semicolon === -1) return undefined;
  for (const parameter of contentType.slice(semicolon + 1).split(';')) {
    const equals = parameter.indexOf('=');
    if (equals === -1 || parameter.slice(0, equals).trim().toLowerCase() !== 'charset') continue;
    const value = parameter.slice(equals + 1).trim();
    return (
      value.startsWith('"') && value.endsWith('"') && value.length > 1 ? value.slice(1, -1) : value
    ).toLowerCase();
  }
  return undefined;
}

/** The inflating stream of a Content-Encoding (body-parser's list); `encoding.unsupported` (415) otherwise. */
function decompressor(encoding: string): Transform {
  switch (encoding) {
    case 'deflate':
      return zlib.createInflate();
    case 'gzip':
      return zlib.createGunzip();
    case 'br':
      return zlib.createBrotliDecompress();
    case 'zstd':
      return zlib.createZstdDecompress();
  }
  throw new RequestBodyError('encoding.unsupported', 415, `unsupported content encoding "${encoding}"`);
}

/**
 * Reads `stream` whole into one Buffer of at most `limit` bytes (`entity.too.large` past it,
 * or at once when `declared`, the Content-Length, says so). `req` is the request it comes
 * from: piped into `stream` when that is an inflater, and watched for an abort.
 */
function readBounded(
  stream: IncomingMessage | Transform,
  req: IncomingMessage,
  limit: number,
  declared: number | undefined,
): Promise<Buffer> {
  if (declared !== undefined && declared > limit) return Promise.reject(tooLarge(declared, limit));
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const done = (error: Error | undefined): void => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      req.off('close', onClose);
      if (error) reject(error);
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received));
    };
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > limit) done(tooLarge(received, limit));
      else chunks.push(chunk);
    };
    const onEnd = (): void => {
      if (declared !== undefined && received !== declared)
        done(new RequestBodyError('request.size.invalid', 400, 'request size did not match content length'));
      else done(undefined);
    };
    const onError = (error: Error): void =>
      done(
        stream === req
          ? aborted()
          : new AppError(
              'invalid_encoding',
              `body is not valid ${String(req.headers['content-encoding'])} data`,
              {
                status: 400,
                cause: error,
              },
            ),
      );
    // The request closed before its body ended: the client went away (or the deadline cut it).
    const onClose = (): void => {
      if (!req.complete) done(aborted());
    };
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
    req.on('close', onClose);
    if (stream !== req) req.pipe(stream as Transform);
  });
}

function tooLarge(received: number, limit: number): RequestBodyError {
  return new RequestBodyError('entity.too.large', 413, `request entity too large (${received} > ${limit})`);
}

function aborted(): RequestBodyError {
  return new RequestBodyError('request.aborted', 400, 'request aborted');
}

/** Reads off the rest of a request (its bytes dropped) and resolves once it has ended or closed. */
function readOff(req: IncomingMessage): Promise<void> {
  if (req.complete || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const finish = (): void => {
      req.off('end', finish);
      req.off('close', finish);
      resolve();
    };
    req.on('end', finish);
    req.on('close', finish);
    req.resume();
  });
}
