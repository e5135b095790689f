/**
 * The life of the plane's processes: spawning one with its output in a log file, waiting
 * until it is ready (an HTTP(S) probe polled until a deadline, or until the process has
 * exited), telling whether a pid is alive and still one of our binaries, and stopping it.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';

/** How long a process gets to exit after SIGTERM before it is SIGKILLed. */
const GRACEFUL_STOP_MS = 10_000;
const PROBE_TIMEOUT_MS = 2000;
const POLL_INTERVAL_MS = 200;
/** How much of a process's log a readiness error quotes. */
const LOG_TAIL_LINES = 15;

/** Starts `binary` with stdout and stderr appended to `logFile`; resolves with its pid. */
export async function spawnLogged(
  binary: string,
  args: readonly string[],
  logFile: string,
  detached: boolean,
): Promise<number> {
  const handle = await open(logFile, 'a');
  const child = spawn(binary, args, { detached, stdio: ['ignore', handle.fd, handle.fd] });
  child.unref();
  await handle.close();
  if (child.pid === undefined) throw new Error(`could not start ${binary}`);
  return child.pid;
}

/** What one probe saw: the HTTP status (0 when no response came) and the body or error. */
export interface ProbeResult {
  status: number;
  body: string;
}

/** Credentials for a probe of the apiserver. */
export interface ApiserverAuth {
  token: string;
  /**
   * The certificate to trust, or undefined before the apiserver's self-signed certificate
   * exists: there is nothing to trust yet, so the server is not verified.
   */
  caPem: string | undefined;
}

/** One GET (HTTPS with `auth`, plain HTTP without) with a short timeout; never rejects. */
export function probe(url: string, auth?: ApiserverAuth): Promise<ProbeResult> {
  return new Promise((resolvePromise) => {
    const onResponse = (res: IncomingMessage): void => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, body }));
    };
    const req = auth
      ? httpsRequest(
          url,
          {
            headers: { Authorization: `Bearer ${auth.token}` },
            ca: auth.caPem,
            rejectUnauthorized: auth.caPem !== undefined,
            timeout: PROBE_TIMEOUT_MS,
          },
          onResponse,
        )
      : httpRequest(url, { timeout: PROBE_TIMEOUT_MS }, onResponse);
    req.on('error', (e) => resolvePromise({ status: 0, body: e.message }));
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

/** What waitUntilReady watches besides the check itself. */
export interface ReadinessWatch {
  /** Epoch ms after which it gives up. */
  deadline: number;
  /** The process being waited for: once it has exited, waiting longer is pointless. */
  pid: number;
  /** Its log, whose tail goes into the error. */
  logFile: string;
}

/**
 * Polls `check` (true when ready, otherwise what it saw) until it returns true; fails with
 * "<what> did not become ready", the last thing seen and the tail of the process's log.
 */
export async function waitUntilReady(
  what: string,
  check: () => Promise<true | string>,
  watch: ReadinessWatch,
): Promise<void> {
  let last = '';
  while (Date.now() < watch.deadline) {
    const result = await check();
    if (result === true) return;
    last = result;
    if (!isAlive(watch.pid)) break;
    await sleep(POLL_INTERVAL_MS); // polling an external process: nothing to await on
  }
  const tail = existsSync(watch.logFile)
    ? (await readFile(watch.logFile, 'utf8')).split('\n').slice(-LOG_TAIL_LINES).join('\n')
    : '';
  const why = isAlive(watch.pid) ? 'timed out' : 'process exited';
  throw new Error(`${what} did not become ready (${why}; last: ${last})\n${tail}`);
}

/** True while `pid` exists (signal 0 checks without signalling). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * True when `pid` is still a process started from `binDir`. A stale state.json (after a
 * reboot, or a run killed without teardown) may name pids that now belong to something else,
 * which must never be signalled.
 */
export function isFromBinDir(pid: number, binDir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(binDir + '/');
  } catch {
    return false; // gone (or no /proc): nothing to stop
  }
}

/** SIGTERM, then SIGKILL if `pid` has not exited within GRACEFUL_STOP_MS. */
export async function stopProcess(pid: number): Promise<void> {
  process.kill(pid, 'SIGTERM');
  const until = Date.now() + GRACEFUL_STOP_MS;
  // Polling: a process that is not our child offers nothing to await its exit on.
  while (isAlive(pid) && Date.now() < until) await sleep(100);
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
}
