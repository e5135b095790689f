/**
 * Network namespaces for the tests: each test gets namespaces and veth pairs of its own, with
 * addresses from 10.213.0.0/16 (no route of this machine's covers it: checked before use), so
 * its traffic stays on loopback and on links it made, never this machine's external
 * interfaces or its gateway. Names carry the process id (`npf-<pid>-<n>`, interfaces
 * `nf<pid>x<n>a`, at most 15 characters), so runs at once never share one, and a run's
 * start removes what a crashed earlier run (its process gone) left behind.
 *
 * Needs root and `ip netns`; `netnsUnavailable()` says why not, for the tests to skip.
 */
import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

/** The test range: 10.213.0.0/16, cut into /30 links. */
const RANGE = { first: (10 << 24) | (213 << 16), blocks: 1 << 14 };
const NS_NAME = /^npf-(\d+)-\w+$/;
const IFACE_NAME = /^nf(\d+)x\d+[ab]$/;

/** One end of a veth pair: its namespace (null: this machine's own), interface and address. */
export interface VethEnd {
  readonly ns: string | null;
  readonly iface: string;
  /** Its IPv4 address, without the prefix length (/30). */
  readonly address: string;
}

/** A veth pair with an address on each end, both up. */
export interface VethLink {
  readonly a: VethEnd;
  readonly b: VethEnd;
}

/** The namespaces and links of one test file, removed by dispose(). */
export interface TestNetwork {
  /** A new namespace with its loopback up; returns its name. */
  namespace(): string;
  /** A veth pair from `a` to `b` (a namespace, or null for this machine's own) with .1 and .2 of a fresh /30. */
  link(a: string | null, b: string | null): VethLink;
  /** Sets one end's link up or down (down: the other end loses its carrier). */
  setLink(end: VethEnd, state: 'up' | 'down'): void;
  /** Runs `command` inside `ns` to its end and returns its output; throws on failure. */
  run(ns: string, command: string, args: readonly string[]): string;
  /** Starts `command` inside `ns`; killed by dispose() if still running. */
  spawn(ns: string, command: string, args: readonly string[], options?: SpawnOptions): ChildProcess;
  /** Kills what spawn() started and removes every namespace and link; safe to call twice. */
  dispose(): void;
}

/** Why these tests cannot make namespaces here (not root, no `ip netns`, the range in use), or null. */
export function netnsUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'not root: creating network namespaces needs CAP_NET_ADMIN';
  const probe = `npf-${process.pid}-probe`;
  try {
    ip(['netns', 'add', probe]);
    ip(['netns', 'del', probe]);
  } catch (error) {
    return `\`ip netns\` is unavailable: ${firstLine(error)}`;
  }
  const overlap = routesOverlappingRange();
  if (overlap.length > 0)
    return `this machine routes part of 10.213.0.0/16 (${overlap.join('; ')}): the test range would collide`;
  return null;
}

/** A fresh set of namespaces and links for one test file, after removing crashed runs' leftovers. */
export function createTestNetwork(): TestNetwork {
  removeLeftovers();
  const namespaces: string[] = [];
  const rootLinks: string[] = [];
  const children: ChildProcess[] = [];
  let counter = 0;
  let block = (process.pid % 1024) * 16;

  /** The next /30 whose addresses this machine does not hold. */
  const nextBlock = (): [string, string] => {
    const taken = rootAddresses();
    for (let tries = 0; tries < RANGE.blocks; tries++) {
      const base = RANGE.first + (block++ % RANGE.blocks) * 4;
      const pair: [string, string] = [ipv4(base + 1), ipv4(base + 2)];
      if (!pair.some((address) => taken.has(address))) return pair;
    }
    throw new Error('no free /30 left in 10.213.0.0/16');
  };

  return {
    namespace() {
      const name = `npf-${process.pid}-${counter++}`;
      ip(['netns', 'add', name]);
      namespaces.push(name);
      ip(['-n', name, 'link', 'set', 'lo', 'up']);
      return name;
    },
    link(a, b) {
      const n = counter++;
      const names = [`nf${process.pid}x${n}a`, `nf${process.pid}x${n}b`] as const;
      if (names[0].length > 15) throw new Error(`interface name ${names[0]} is longer than 15 characters`);
      ip(['link', 'add', names[0], 'type', 'veth', 'peer', 'name', names[1]]);
      // Recorded before anything else can fail: dispose() deletes it (and so its peer).
      rootLinks.push(names[0]);
      const addresses = nextBlock();
      const ends = ([a, b] as const).map((ns, i): VethEnd => ({
        ns,
        iface: names[i]!,
        address: addresses[i]!,
      }));
      for (const end of ends) {
        if (end.ns !== null) ip(['link', 'set', end.iface, 'netns', end.ns]);
        ip([...inNs(end.ns), 'addr', 'add', `${end.address}/30`, 'dev', end.iface]);
        ip([...inNs(end.ns), 'link', 'set', end.iface, 'up']);
      }
      return { a: ends[0]!, b: ends[1]! };
    },
    setLink(end, state) {
      ip([...inNs(end.ns), 'link', 'set', end.iface, state]);
    },
    run(ns, command, args) {
      return execFileSync('ip', ['netns', 'exec', ns, command, ...args], { encoding: 'utf8', stdio: 'pipe' });
    },
    spawn(ns, command, args, options = {}) {
      const child = spawn('ip', ['netns', 'exec', ns, command, ...args], options);
      children.push(child);
      return child;
    },
    dispose() {
      for (const child of children.splice(0))
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      // A namespace goes with its links; a root-namespace end goes with its peer.
      for (const name of namespaces.splice(0)) tryIp(['netns', 'del', name]);
      for (const iface of rootLinks.splice(0)) if (linkExists(iface)) tryIp(['link', 'del', iface]);
    },
  };
}

/** Removes the namespaces and root-namespace links of earlier runs whose process is gone. */
function removeLeftovers(): void {
  for (const line of ip(['netns', 'list']).split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const pid = NS_NAME.exec(name)?.[1];
    if (pid !== undefined && !isAlive(Number(pid))) tryIp(['netns', 'del', name]);
  }
  for (const line of ip(['-o', 'link', 'show']).split('\n')) {
    const name = /^\d+: ([^:@]+)/.exec(line)?.[1] ?? '';
    const pid = IFACE_NAME.exec(name)?.[1];
    if (pid !== undefined && !isAlive(Number(pid)) && linkExists(name)) tryIp(['link', 'del', name]);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

/** The route types `ip route` may print before a destination. */
const ROUTE_TYPES = new Set([
  'unicast',
  'local',
  'broadcast',
  'multicast',
  'anycast',
  'blackhole',
  'unreachable',
  'prohibit',
  'throw',
  'nat',
]);

/** The routes of this machine's own namespace that overlap 10.213.0.0/16, but for test links'. */
function routesOverlappingRange(): string[] {
  const overlapping: string[] = [];
  for (const line of ip(['-4', 'route', 'show', 'table', 'all']).split('\n')) {
    const destination =
      line
        .trim()
        .split(/\s+/)
        .find((word) => !ROUTE_TYPES.has(word)) ?? '';
    if (destination === '' || destination === 'default' || / dev nf\d+x\d+[ab]\b/.test(line)) continue;
    const [address = '', lengthText = '32'] = destination.split('/');
    const start = wordOf(address);
    const length = Number(lengthText);
    if (start === null || !(length >= 0 && length <= 32)) continue;
    // Two prefixes overlap when they agree on the bits of the shorter one.
    const shorter = Math.min(length, 16);
    const mask = shorter === 0 ? 0 : (~0 << (32 - shorter)) >>> 0;
    if ((start & mask) >>> 0 === (RANGE.first & mask) >>> 0) overlapping.push(line.trim());
  }
  return overlapping;
}

/** The IPv4 addresses this machine's own namespace holds. */
function rootAddresses(): Set<string> {
  const taken = new Set<string>();
  for (const match of ip(['-4', '-o', 'addr', 'show']).matchAll(/ inet (\d+\.\d+\.\d+\.\d+)\//g))
    taken.add(match[1]!);
  return taken;
}

function linkExists(iface: string): boolean {
  try {
    ip(['link', 'show', iface]);
    return true;
  } catch {
    return false;
  }
}

function inNs(ns: string | null): string[] {
  return ns === null ? [] : ['-n', ns];
}

function ip(args: readonly string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: 'pipe' });
}

function tryIp(args: readonly string[]): void {
  try {
    ip(args);
  } catch {
    // Already gone (a namespace takes its links with it).
  }
}

function ipv4(word: number): string {
  return [word >>> 24, (word >>> 16) & 0xff, (word >>> 8) & 0xff, word & 0xff].join('.');
}

function wordOf(address: string): number | null {
  const parts = address.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !(p >= 0 && p <= 255))) return null;
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

function firstLine(error: unknown): string {
  const stderr = (error as { stderr?: unknown }).stderr;
  return String(typeof stderr === 'string' && stderr !== '' ? stderr : (error as Error).message).split(
    '\n',
  )[0]!;
}
