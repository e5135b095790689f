/**
 * Load from wrk (the Debian package): a C load generator that costs a fraction of a Node
 * client's CPU, so on a small machine the latency measured is the server's rather than the
 * client's own queueing. wrk is closed-loop: each of C connections sends its next request
 * when the previous one is answered, so it measures the throughput the server reaches at a
 * concurrency of C and the latency of each request at it (no coordinated-omission
 * correction: a stall delays the requests behind it, which are then not sent).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** One request of the mix: its headers and body. */
export interface WrkRequest {
  headers: Record<string, string>;
  body: string;
}

/** What one wrk run measured. */
export interface WrkResult {
  connections: number;
  requests: number;
  requestsPerSecond: number;
  /** Answers other than 2xx/3xx, and socket errors (connect, read, write, timeout). */
  errors: number;
  /** The first refused answer's status and body (per wrk thread), when there was one. */
  firstError?: string;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
}

/** True when wrk is on PATH. */
export async function wrkAvailable(): Promise<boolean> {
  try {
    await run('wrk', ['--version']);
    return true;
  } catch (error) {
    // wrk --version prints its version and exits 1.
    return (error as { stdout?: string }).stdout?.startsWith('wrk') ?? false;
  }
}

/**
 * Writes the Lua script that POSTs the requests in turn (each connection starting at its own
 * place in the list) into `dir`, and returns its path.
 */
export function writeWrkScript(
  dir: string,
  path: string,
  requests: readonly WrkRequest[],
  pacing: { rate: number; threads: number } | null = null,
): string {
  const data = join(dir, 'wrk-requests.lua');
  const quote = (text: string): string => `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  writeFileSync(
    data,
    `return {\n${requests
      .map(
        (r) =>
          `{ headers = { ${Object.entries(r.headers)
            .map(([k, v]) => `[${quote(k)}] = ${quote(v)}`)
            .join(', ')} }, body = ${quote(r.body)} },`,
      )
      .join('\n')}\n}\n`,
  );
  const script = join(dir, 'wrk-post.lua');
  writeFileSync(
    script,
    `local list = dofile(${quote(data)})
local prepared = {}
local counter = 0
function setup(thread) counter = counter + 1; thread:set("offset", counter * 7) end
local i = 0
-- Formatted in init: wrk sets the Host header only then (HTTP/1.1 without it is a 400).
function init(args)
  i = tonumber(offset) or 0
  for n, r in ipairs(list) do prepared[n] = wrk.format("POST", ${quote(path)}, r.headers, r.body) end
end
function request()
  i = i + 1
  return prepared[(i % #prepared) + 1]
end
${
  pacing === null
    ? ''
    : `-- Paced: each thread sends at its share of the rate, on a schedule of its own (not after
-- each answer), as long as one of its connections is free.
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } timespec_t;
int clock_gettime(int clock, timespec_t *t);
]]
local ts = ffi.new("timespec_t")
local function now_ms() ffi.C.clock_gettime(1, ts); return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6 end
local interval = ${(1000 * pacing.threads) / pacing.rate}
local due = nil
function delay()
  local t = now_ms()
  if due == nil then due = t end
  due = due + interval
  local wait = due - interval - t
  if wait < 0 then return 0 end
  return wait
end`
}
local told = false
function response(status, headers, body)
  if status >= 300 and not told then
    told = true
    local f = io.open(${quote(join(dir, 'wrk-first-error.txt'))}, "a")
    if f then f:write(status, " ", string.sub(body or "", 1, 300), "\\n"); f:close() end
  end
end
`,
  );
  return script;
}

/** wrk threads for `connections`: one per 16, at most 4. */
export function wrkThreads(connections: number): number {
  return Math.max(1, Math.min(4, Math.ceil(connections / 16)));
}

/** Runs wrk against `url` for `seconds` with `connections` and parses its report. */
export async function runWrk(
  url: string,
  script: string,
  options: { connections: number; seconds: number; threads: number },
): Promise<WrkResult> {
  const threads = options.threads;
  const { stdout } = await run(
    'wrk',
    [
      `--threads=${threads}`,
      `--connections=${options.connections}`,
      `--duration=${options.seconds}s`,
      '--timeout=10s',
      '--latency',
      `--script=${script}`,
      url,
    ],
    { maxBuffer: 1024 * 1024 },
  );
  const result = parseWrkReport(stdout, options.connections);
  const errorFile = join(dirname(script), 'wrk-first-error.txt');
  if (existsSync(errorFile)) {
    result.firstError = readFileSync(errorFile, 'utf8').split('\n')[0];
    rmSync(errorFile);
  }
  return result;
}

/** A wrk duration (`812.00us`, `3.21ms`, `1.20s`, `2.00m`) in milliseconds. */
export function wrkMs(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (!match) throw new Error(`wrk: unreadable duration ${JSON.stringify(text)}`);
  const value = Number(match[1]);
  const unit = match[2];
  return unit === 'us' ? value / 1000 : unit === 'ms' ? value : unit === 's' ? value * 1000 : value * 60_000;
}

/** Reads wrk's `--latency` report. */
export function parseWrkReport(report: string, connections: number): WrkResult {
  const percentile = (p: string): number => {
    const match = new RegExp(`^\\s*${p}%\\s+(\\S+)`, 'm').exec(report);
    if (!match?.[1]) throw new Error(`wrk: no ${p}% latency in its report`);
    return wrkMs(match[1]);
  };
  const max = /^\s*Latency\s+\S+\s+\S+\s+(\S+)/m.exec(report)?.[1];
  const requests = Number(/(\d+) requests in /.exec(report)?.[1] ?? Number.NaN);
  const rate = Number(/Requests\/sec:\s+([\d.]+)/.exec(report)?.[1] ?? Number.NaN);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(report)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(report);
  const socketErrors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
  return {
    connections,
    requests,
    requestsPerSecond: Math.round(rate),
    errors: non2xx + socketErrors,
    latencyMs: {
      p50: percentile('50'),
      p90: percentile('90'),
      p99: percentile('99'),
      max: max === undefined ? Number.NaN : wrkMs(max),
    },
  };
}
