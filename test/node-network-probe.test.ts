/**
 * The agent's network check end to end, in network namespaces this test makes
 * (test/setup/netns.ts): namespace A is the node, B its gateway and API server, one veth
 * between them, A's default route through B. The check runs inside A as a real process
 * (test/setup/network-check-process.ts) on a short period; a TCP listener inside B plays the
 * API server, and no listener on the gateway port makes B answer the gateway probe with an RST.
 *
 * 1. Both answer: no problem, the gateway's RST counted as an answer. B's end of the link is
 *    set down: network-unreachable within three periods and the connect timeout (and the
 *    scheduling slack below); set up again: cleared within a period and the timeout.
 * 2. B drops what it would send A (a blackhole route), so the gateway probe goes unanswered
 *    while ARP still resolves: the complete neighbour entry counts as an answer; without the
 *    neighbour fallback the same gateway is unreachable.
 *
 * Every packet stays on A, B and their veth: nothing reaches this machine's interfaces.
 * Skipped, saying why, where namespaces cannot be made (not root, no `ip netns`).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createTestNetwork, netnsUnavailable, type TestNetwork, type VethLink } from './setup/netns.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./setup/network-check-process.ts', import.meta.url));
const INTERVAL_MS = 500;
const TIMEOUT_MS = 300;
const MISSES = 3;
const API_PORT = 6443;
/** Process start, pipes and timers on a busy machine: what a bound may take beyond its arithmetic. */
const SLACK_MS = 1000;

/** One round the check process printed, and when this test read it. */
interface Round {
  at: number;
  problems: { reason: string; message: string }[];
  probes: Record<string, number>;
  seenAt: number;
}

/** A network check process inside `ns`; `next(predicate, ms)` waits for a round that matches. */
interface CheckProcess {
  child: ChildProcess;
  rounds: Round[];
  stderr: string[];
  next(predicate: (round: Round) => boolean, timeoutMs: number, what: string): Promise<Round>;
}

const unavailable = netnsUnavailable();
if (unavailable) console.log(`node-network-probe.test.ts skipped: ${unavailable}`);

(unavailable ? describe.skip : describe)('the network probe in network namespaces', () => {
  let net: TestNetwork;
  let node: string;
  let link: VethLink;

  function startCheck(config: Record<string, unknown>, env: Record<string, string>): CheckProcess {
    const child = net.spawn(node, process.execPath, ['--import', 'tsx', SCRIPT, JSON.stringify(config)], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    });
    const rounds: Round[] = [];
    const stderr: string[] = [];
    const waiters: (() => void)[] = [];
    createInterface({ input: child.stdout! }).on('line', (line) => {
      rounds.push({ ...(JSON.parse(line) as Omit<Round, 'seenAt'>), seenAt: performance.now() });
      for (const wake of waiters.splice(0)) wake();
    });
    createInterface({ input: child.stderr! }).on('line', (line) => stderr.push(line));
    return {
      child,
      rounds,
      stderr,
      async next(predicate, timeoutMs, what) {
        const from = rounds.length;
        const deadline = performance.now() + timeoutMs;
        for (;;) {
          const found = rounds.slice(from).find(predicate);
          if (found) return found;
          if (performance.now() > deadline || child.exitCode !== null)
            throw new Error(
              `no round ${what} within ${timeoutMs} ms; last: ${JSON.stringify(rounds.at(-1))}\n${stderr.join('\n')}`,
            );
          await new Promise<void>((resolve) => {
            waiters.push(resolve);
            setTimeout(resolve, 50);
          });
        }
      },
    };
  }

  const unreachable = (round: Round): boolean =>
    round.problems.some((p) => p.reason === 'network-unreachable');

  beforeAll(async () => {
    net = createTestNetwork();
    node = net.namespace();
    const gateway = net.namespace();
    link = net.link(node, gateway);
    net.run(node, 'ip', ['route', 'add', 'default', 'via', link.b.address]);
    // The API server: accepts and closes.
    const server = net.spawn(
      gateway,
      process.execPath,
      [
        '-e',
        `require('node:net').createServer((s) => s.destroy()).listen(${API_PORT}, '${link.b.address}', () => console.log('listening'))`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      server.stdout!.once('data', () => resolve());
      server.once('exit', (code) => reject(new Error(`the API server stand-in exited (${code})`)));
    });
  });

  afterAll(() => net?.dispose());

  it('raises network-unreachable within three periods of the link going down, and clears it once it is up', async () => {
    const check = startCheck(
      { intervalMs: INTERVAL_MS, timeoutMs: TIMEOUT_MS, misses: MISSES, gatewayPort: 53 },
      { KUBERNETES_SERVICE_HOST: link.b.address, KUBERNETES_SERVICE_PORT: String(API_PORT) },
    );
    // Up: the API server accepts, the gateway refuses (RST): both answers.
    const healthy = await check.next(
      (r) =>
        r.problems.length === 0 &&
        (r.probes['gateway/refused'] ?? 0) >= 2 &&
        (r.probes['api-server/connected'] ?? 0) >= 2,
      20_000,
      'with both answering',
    );
    expect(Object.keys(healthy.probes).sort()).toEqual(['api-server/connected', 'gateway/refused']);

    net.setLink(link.b, 'down');
    const down = performance.now();
    const failed = await check.next(unreachable, 10_000, 'with network-unreachable');
    const detectedMs = failed.seenAt - down;
    expect(detectedMs).toBeLessThan(MISSES * INTERVAL_MS + TIMEOUT_MS + SLACK_MS);
    expect(failed.problems).toHaveLength(1);
    expect(failed.problems[0]?.message).toContain(
      `gateway ${link.b.address}:53: ${MISSES} probes missed in a row`,
    );
    expect(failed.problems[0]?.message).toContain(
      `api-server ${link.b.address}:${API_PORT}: ${MISSES} probes missed in a row`,
    );
    expect(failed.problems[0]?.message).toContain(`timeout after ${TIMEOUT_MS} ms`);

    net.setLink(link.b, 'up');
    const up = performance.now();
    const cleared = await check.next((r) => r.problems.length === 0, 10_000, 'cleared');
    // The carrier returns at once; ARP then resolves within the first attempt.
    expect(cleared.seenAt - up).toBeLessThan(2 * INTERVAL_MS + TIMEOUT_MS + SLACK_MS);
    console.log(
      `network probe: link down → network-unreachable in ${detectedMs.toFixed(0)} ms (bound ${MISSES * INTERVAL_MS + TIMEOUT_MS + SLACK_MS}); up → cleared in ${(cleared.seenAt - up).toFixed(0)} ms`,
    );
    check.child.kill('SIGTERM');
  });

  it('counts a gateway that drops the probe but resolves ARP as answering, unless told not to', async () => {
    // B sends nothing back to A's address (no RST) but still answers ARP (rp_filter off).
    net.run(link.b.ns!, 'sysctl', [
      '-qw',
      'net.ipv4.conf.all.rp_filter=0',
      `net.ipv4.conf.${link.b.iface}.rp_filter=0`,
    ]);
    net.run(link.b.ns!, 'ip', ['route', 'add', 'blackhole', `${link.a.address}/32`]);
    try {
      const config = { intervalMs: INTERVAL_MS, timeoutMs: TIMEOUT_MS, misses: MISSES, apiServer: false };
      const lenient = startCheck(config, {});
      const answered = await lenient.next(
        (r) => (r.probes['gateway/neighbour'] ?? 0) >= MISSES + 2,
        20_000,
        'with the neighbour answering',
      );
      expect(lenient.rounds.every((r) => r.problems.length === 0)).toBe(true);
      expect(answered.probes['gateway/refused']).toBeUndefined();
      lenient.child.kill('SIGTERM');

      const strict = startCheck({ ...config, gatewayNeighbour: false }, {});
      const failed = await strict.next(unreachable, 20_000, 'with network-unreachable');
      expect(failed.problems[0]?.message).toBe(
        `gateway ${link.b.address}:53: ${MISSES} probes missed in a row over ${Math.round(((MISSES - 1) * INTERVAL_MS) / 1000)} s (timeout after ${TIMEOUT_MS} ms)`,
      );
      strict.child.kill('SIGTERM');
    } finally {
      net.run(link.b.ns!, 'ip', ['route', 'del', 'blackhole', `${link.a.address}/32`]);
    }
  });
});
