import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { httpFailureOf } from './http-failures.js';
import {
  hasRequestBody,
  parseJsonRequestBody,
  readRequestBody,
  requestCharset,
  type RawRequestBody,
} from './json-request-body.js';
import { serve, type TestServer } from './testing.js';

const LIMIT = 1024;

/** The answer both servers give: the failure as httpFailureOf maps it, or the parsed value. */
function answer(res: ServerResponse, error: unknown, value?: unknown): void {
  const body =
    error === undefined
      ? { status: 200, value }
      : (({ status, code, message }) => ({ status, code, message }))(httpFailureOf(error, LIMIT));
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}

/** What the reader saw last (for checks on the raw bytes). */
let lastRead: RawRequestBody | undefined;

async function plain(req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    lastRead = await readRequestBody(req, { limit: LIMIT });
    answer(res, undefined, lastRead === undefined ? null : parseJsonRequestBody(lastRead));
  } catch (error) {
    answer(res, error);
  }
}

/** express.json as the ingest function and the controller used it: the behaviour to keep. */
function bodyParser(): (req: IncomingMessage, res: ServerResponse) => void {
  const app = express();
  app.use(express.json({ limit: LIMIT, strict: true, type: () => true }));
  app.use((req: express.Request, res: express.Response) => answer(res, undefined, req.body ?? null));
  app.use((error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
    answer(res, error),
  );
  return (req, res) => app(req, res);
}

let ours: TestServer;
let theirs: TestServer;
beforeAll(async () => {
  ours = await serve(plain);
  theirs = await serve(bodyParser());
});
afterAll(async () => {
  await ours.close();
  await theirs.close();
});

async function post(server: TestServer, body: string | Uint8Array, headers: Record<string, string>) {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return JSON.parse(await response.text()) as { status: number; code?: string; message?: string };
}

/** POSTs `pieces` with Transfer-Encoding: chunked, one chunk each. */
function postChunked(
  server: TestServer,
  pieces: (string | Uint8Array)[],
  headers: Record<string, string>,
): Promise<{ status: number; code?: string; message?: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      server.url,
      { method: 'POST', headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve(JSON.parse(text) as { status: number }));
      },
    );
    req.on('error', reject);
    for (const piece of pieces) req.write(piece);
    req.end();
  });
}

const object = '{"a":[1,2,{"b":"ü"}]}';
const utf16 = (text: string): Buffer => Buffer.from(text, 'utf16le');

describe('readRequestBody and parseJsonRequestBody answer as express.json did', () => {
  it.each([
    ['an object', object, {}],
    ['an array with whitespace around', ` \n[1, "x"]\t`, {}],
    ['an empty body (as {})', '', {}],
    ['whitespace only', '   ', {}],
    ['a bare string (strict)', '"snapshot"', {}],
    ['a number after whitespace (strict)', '  5', {}],
    ['truncated JSON', '{"a":', {}],
    ['NaN', '{"a":NaN}', {}],
    ['a UTF-8 byte order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(object)]), {}],
    ['invalid UTF-8 in a string', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), {}],
    ['gzip', gzipSync(object), { 'content-encoding': 'gzip' }],
    ['gzip, upper-case', gzipSync(object), { 'content-encoding': 'GZIP' }],
    ['deflate', deflateSync(object), { 'content-encoding': 'deflate' }],
    ['br', brotliCompressSync(object), { 'content-encoding': 'br' }],
    ['zstd', zstdCompressSync(object), { 'content-encoding': 'zstd' }],
    ['identity', object, { 'content-encoding': 'identity' }],
    ['an unknown encoding', object, { 'content-encoding': 'snappy' }],
    ['two encodings', gzipSync(object), { 'content-encoding': 'gzip, br' }],
    ['over the limit', `[${' '.repeat(LIMIT)}]`, {}],
    ['over the limit once inflated', gzipSync(`[${' '.repeat(64 * LIMIT)}]`), { 'content-encoding': 'gzip' }],
    ['charset latin1', object, { 'content-type': 'application/json; charset=latin1' }],
    ['charset utf8 (no dash)', object, { 'content-type': 'application/json; charset=utf8' }],
    ['charset UTF-8, quoted', object, { 'content-type': 'application/json; charset="UTF-8"' }],
    ['charset utf-16le', utf16(object), { 'content-type': 'application/json; charset=utf-16le' }],
    [
      'charset utf-16 with a BOM',
      utf16(`\ufeff${object}`),
      { 'content-type': 'application/json; charset=utf-16' },
    ],
  ] as [string, string | Uint8Array, Record<string, string>][])('%s', async (_name, body, headers) => {
    const [mine, expected] = await Promise.all([post(ours, body, headers), post(theirs, body, headers)]);
    expect(mine).toEqual(expected);
  });

  it.each([
    ['an object', [object.slice(0, 5), object.slice(5)], {}],
    [
      'gzip',
      [gzipSync(object).subarray(0, 10), gzipSync(object).subarray(10)],
      { 'content-encoding': 'gzip' },
    ],
    ['over the limit', ['[', ' '.repeat(LIMIT), ']'], {}],
  ] as [string, (string | Uint8Array)[], Record<string, string>][])(
    'a chunked body (no Content-Length): %s',
    async (_name, pieces, headers) => {
      const [mine, expected] = await Promise.all([
        postChunked(ours, pieces, headers),
        postChunked(theirs, pieces, headers),
      ]);
      expect(mine).toEqual(expected);
    },
  );

  it('leaves a UTF-8 byte order mark off the raw bytes, so they can be forwarded as they are', async () => {
    await post(ours, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(object)]), {});
    expect(lastRead?.raw.toString()).toBe(object);
    expect(lastRead?.charset).toBe('utf-8');
  });

  it('answers a compressed body that does not inflate 400 invalid_encoding (body-parser: a 500)', async () => {
    const broken = gzipSync(object).subarray(0, 12);
    expect(await post(ours, broken, { 'content-encoding': 'gzip' })).toEqual({
      status: 400,
      code: 'invalid_encoding',
      message: 'body is not valid gzip data',
    });
    expect((await post(theirs, broken, { 'content-encoding': 'gzip' })).status).toBe(500);
  });

  it('refuses UTF-7 and UTF-32, which body-parser decoded through iconv-lite, as unsupported charsets', () => {
    for (const charset of ['utf-7', 'utf-32']) {
      expect(() => requestCharset({ 'content-type': `application/json; charset=${charset}` })).toThrow(
        expect.objectContaining({ type: 'charset.unsupported', status: 415 }),
      );
    }
    expect(requestCharset({ 'content-type': 'application/json; foo=bar; charset=UTF-16BE' })).toBe(
      'utf-16be',
    );
    expect(requestCharset({ 'content-type': 'application/json; charset' })).toBe('utf-8');
  });

  it('has a body with a numeric Content-Length or any Transfer-Encoding (type-is hasBody)', () => {
    expect(hasRequestBody({ 'content-length': '0' })).toBe(true);
    expect(hasRequestBody({ 'transfer-encoding': 'chunked' })).toBe(true);
    expect(hasRequestBody({})).toBe(false);
    expect(hasRequestBody({ 'content-length': 'x' })).toBe(false);
  });

  it('decodes UTF-16 big-endian by its charset or its byte order mark', () => {
    const be = Buffer.from(utf16('{"x":1}')).swap16();
    expect(parseJsonRequestBody({ raw: be, charset: 'utf-16be' })).toEqual({ x: 1 });
    const marked = Buffer.concat([Buffer.from([0xfe, 0xff]), be]);
    expect(parseJsonRequestBody({ raw: marked, charset: 'utf-16' })).toEqual({ x: 1 });
  });

  it('rejects request.aborted when the client goes away before the body ends', async () => {
    let failed: (error: unknown) => void = () => undefined;
    const failure = new Promise<unknown>((resolve) => (failed = resolve));
    const server = await serve((req) =>
      readRequestBody(req, { limit: LIMIT }).then(() => failed(undefined), failed),
    );
    try {
      const req = request(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': '100' },
      });
      req.on('error', () => undefined);
      req.write('{"a":', () => setImmediate(() => req.destroy()));
      expect(await failure).toMatchObject({ type: 'request.aborted', status: 400 });
    } finally {
      await server.close();
    }
  });

  it('reads nothing from a request without a body', async () => {
    let read: (body: unknown) => void = () => undefined;
    const done = new Promise<unknown>((resolve) => (read = resolve));
    const server = await serve(async (req, res) => {
      read(await readRequestBody(req, { limit: LIMIT }));
      res.end();
    });
    try {
      const socket = connect(server.port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.end('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\r\n');
      expect(await done).toBeUndefined();
      socket.destroy();
    } finally {
      await server.close();
    }
  });
});
