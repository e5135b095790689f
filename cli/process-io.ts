/** The real process I/O behind `CliIO`. */
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { CliIO } from './io.js';

/** Reads all of standard input as UTF-8. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The real process I/O. */
export function processIO(): CliIO {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    readFile: (path) => (path === '-' ? readStdin() : readFile(path, 'utf8')),
    readStream: (path) => (path === '-' ? process.stdin : createReadStream(path)),
    isTTY: Boolean(process.stdout.isTTY),
  };
}
