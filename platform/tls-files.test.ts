import { describe, expect, it } from '@jest/globals';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FakeClock } from './clock.js';
import { createLogger } from './logger.js';
import { createHttpServer } from './http-server.js';
import { readTlsPair, watchTlsPair, type TlsPair } from './tls-files.js';

// A CA-signed certificate for 127.0.0.1 and localhost (functions/forwarder/testdata, test only).
const testdata = (file: string): string =>
  fileURLToPath(new URL(`../functions/forwarder/testdata/${file}`, import.meta.url));

function files(): { certFile: string; keyFile: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'npu-fault-tls-'));
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  copyFileSync(testdata('replica.pem'), certFile);
  copyFileSync(testdata('replica-key.pem'), keyFile);
  return { certFile, keyFile, dir };
}

describe('readTlsPair', () => {
  it('reads a pair, and names the file that is missing or does not load', () => {
    const f = files();
    expect(readTlsPair(f).cert.equals(readFileSync(testdata('replica.pem')))).toBe(true);
    expect(() => readTlsPair({ ...f, keyFile: join(f.dir, 'nope') })).toThrow(
      `TLS key ${join(f.dir, 'nope')}: ENOENT`,
    );
    writeFileSync(f.keyFile, 'not a key');
    expect(() => readTlsPair(f)).toThrow(/^TLS certificate .*tls\.crt and key .*tls\.key do not load: /);
  });
});

describe('watchTlsPair', () => {
  it('applies a renewed pair, and keeps the old one when the new one does not load', async () => {
    const f = files();
    const clock = new FakeClock();
    const applied: TlsPair[] = [];
    const failures: string[] = [];
    const cancel = watchTlsPair(
      { ...f, reloadIntervalMs: 60_000 },
      readTlsPair(f),
      clock,
      (pair) => applied.push(pair),
      (error) => failures.push(error.message),
    );
    await clock.advance(60_000);
    expect(applied).toHaveLength(0); // unchanged
    writeFileSync(f.keyFile, 'half written');
    await clock.advance(60_000);
    expect(failures).toHaveLength(1);
    // "Renewed": the same certificate written again with a trailing newline is a change.
    writeFileSync(f.certFile, Buffer.concat([readFileSync(testdata('replica.pem')), Buffer.from('\n')]));
    copyFileSync(testdata('replica-key.pem'), f.keyFile);
    await clock.advance(60_000);
    expect(applied).toHaveLength(1);
    cancel();
    writeFileSync(f.certFile, 'x');
    await clock.advance(120_000);
    expect(failures).toHaveLength(1);
  });
});

describe('createHttpServer with tls', () => {
  it('serves HTTPS, and refuses to start on a bad pair with the file named', async () => {
    const f = files();
    const log = createLogger({ level: 'silent' });
    const server = createHttpServer({ host: '127.0.0.1', port: 0, log, tls: f });
    const stop = new AbortController();
    const running = server.start(stop.signal);
    const { port } = await server.listening;
    // Plain HTTP on the TLS port gets no HTTP answer.
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    stop.abort();
    await running;

    const bad = createHttpServer({
      host: '127.0.0.1',
      port: 0,
      log,
      tls: { ...f, certFile: join(f.dir, 'missing') },
    });
    await expect(bad.start(new AbortController().signal)).rejects.toThrow(
      /TLS certificate .*missing: ENOENT/,
    );
  });
});
