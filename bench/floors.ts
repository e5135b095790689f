/**
 * `node --import tsx bench/floors.ts [--rate 1000] [--seconds 10] [--iterations 20000]`: the
 * floors the pipeline's cost per snapshot is read against (docs/performance.md, "Cost per
 * snapshot"), on this machine:
 *
 * - **a bare node:http server** answering the agent's request (POST of the same 8-device
 *   snapshot, a small JSON answer) in a process of its own, pinned to core 0, fed open-loop at
 *   `--rate` requests/s over keep-alive connections from this process on core 1: its CPU per
 *   request, from the child's own `process.cpuUsage()`. With `--parse` the bare server also
 *   JSON.parses each body (the least a JSON endpoint does).
 * - **JSON.parse and JSON.stringify** of the same snapshot's bytes, and of a 50-snapshot
 *   observations batch per snapshot (what a controller replica parses), in this process.
 *
 * Prints one JSON line. Not part of the test suite.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { npuSnapshot } from '../core/engine/testing.js';

/** The 8-device 910B snapshot the pipeline benchmark's agents post. */
export function agentBody(): string {
  return JSON.stringify(
    npuSnapshot(
      { node: 'bench-0001', boot: 'bench', seq: 1, t: 0 },
      Array.from({ length: 8 }, (_, npu) => ({ npu })),
    ),
  );
}

/** µs per call of `fn`, best of 5 rounds of `iterations` (after one warm-up round). */
function perCall(iterations: number, fn: () => unknown): number {
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 6; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) fn();
    const us = Number(process.hrtime.bigint() - start) / 1000 / iterations;
    if (round > 0) best = Math.min(best, us);
  }
  return best;
}

/** The child: a bare server; prints its port, then its CPU µs when stdin closes. */
function serve(parse: boolean): void {
  const answer =
    '{"leader":"replica-1","term":1,"results":[{"node":"bench-0001","accepted":true,"entry":null}]}';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (parse) JSON.parse(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
      res.end(answer);
    });
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' ? address?.port : 0 })}\n`);
  });
  let start = process.cpuUsage();
  process.on('SIGUSR2', () => (start = process.cpuUsage()));
  process.stdin.resume();
  process.stdin.on('end', () => {
    const used = process.cpuUsage(start);
    process.stdout.write(`${JSON.stringify({ cpuUs: used.user + used.system })}\n`);
    process.exit(0);
  });
}

async function bareServer(parse: boolean, rate: number, seconds: number, body: string): Promise<number> {
  const child = spawn(
    'taskset',
    [
      '-c',
      '0',
      process.execPath,
      '--import',
      'tsx',
      new URL(import.meta.url).pathname,
      '--serve',
      ...(parse ? ['--parse'] : []),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout });
  const next = async (): Promise<Record<string, number>> =>
    JSON.parse((await once(lines, 'line'))[0] as string) as Record<string, number>;
  const { port } = await next();
  const dispatcher = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
  const url = `http://127.0.0.1:${port}/v1/snapshots`;
  const post = (): Promise<unknown> =>
    request(url, { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher }).then(
      (r) => r.body.text(),
    );
  // Warm-up, then the measured window: open loop at `rate`.
  const run = async (ms: number): Promise<number> => {
    const started = Date.now();
    const inFlight = new Set<Promise<unknown>>();
    let sent = 0;
    while (Date.now() - started < ms) {
      const due = Math.floor(((Date.now() - started) / 1000) * rate);
      for (; sent < due; sent++) {
        const p = post().finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await Promise.all(inFlight);
    return sent;
  };
  await run(2000);
  child.kill('SIGUSR2');
  await new Promise((resolve) => setTimeout(resolve, 100));
  const sent = await run(seconds * 1000);
  child.stdin.end();
  const { cpuUs } = await next();
  await dispatcher.close();
  return cpuUs! / sent;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      serve: { type: 'boolean' },
      parse: { type: 'boolean' },
      rate: { type: 'string' },
      seconds: { type: 'string' },
      iterations: { type: 'string' },
    },
  });
  if (values.serve) return serve(values.parse === true);
  const rate = Number(values.rate ?? 1000);
  const seconds = Number(values.seconds ?? 10);
  const iterations = Number(values.iterations ?? 20_000);
  const body = agentBody();
  const batch = `{"observations":[${Array.from({ length: 50 }, () => `{"snapshot":${body}}`).join(',')}]}`;
  const parsed = JSON.parse(body) as unknown;
  const result = {
    machine: `${process.arch}, Node ${process.version}`,
    snapshotBytes: Buffer.byteLength(body),
    jsonParseUs: perCall(iterations, () => JSON.parse(body)),
    jsonStringifyUs: perCall(iterations, () => JSON.stringify(parsed)),
    batchParsePerSnapshotUs: perCall(Math.ceil(iterations / 50), () => JSON.parse(batch)) / 50,
    bareServerUsPerRequest: await bareServer(false, rate, seconds, body),
    bareServerWithParseUsPerRequest: await bareServer(true, rate, seconds, body),
    rate,
    seconds,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

await main();
