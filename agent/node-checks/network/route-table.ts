/**
 * The kernel's IPv4 routing table as /proc/net/route prints it, read for the default route's
 * gateway. Pure: text in, routes out.
 *
 *     Iface  Destination  Gateway   Flags  RefCnt  Use  Metric  Mask      MTU  Window  IRTT
 *     eth0   00000000     010200C0  0003   0       0    100     00000000  0    0       0
 *
 * Addresses are the raw 32-bit words in hex, as the machine stores them: little-endian on
 * x86-64 and arm64 (the nodes this runs on), so `010200C0` is 192.0.2.1. Columns are found by
 * the header's names, not by position. The table lists routes in the kernel's trie order,
 * destination 0.0.0.0 first, so a read cut short still holds the default routes.
 */

/** RTF_UP: the route is usable. */
const RTF_UP = 0x1;
/** RTF_GATEWAY: the destination is reached through a gateway. */
const RTF_GATEWAY = 0x2;
/** RTF_REJECT: packets to the destination are refused (an unreachable or prohibit route). */
const RTF_REJECT = 0x200;

/** The columns a default route is read from. */
const COLUMNS = ['Iface', 'Destination', 'Gateway', 'Flags', 'Metric', 'Mask'] as const;

/** One usable default route: 0.0.0.0/0 through a gateway. */
export interface DefaultRoute {
  readonly iface: string;
  /** The gateway's dotted IPv4 address. */
  readonly gateway: string;
  readonly metric: number;
}

/** What a table held. */
export type RouteTable =
  | {
      readonly ok: true;
      /** The usable default routes, the preferred one (lowest metric, first listed) first. */
      readonly defaults: readonly DefaultRoute[];
      /** Lines that were not routes: how many, and why the first was not. */
      readonly skipped: number;
      readonly firstSkipped: string | null;
    }
  | { readonly ok: false; readonly error: string };

/** Reads `text` (the whole of /proc/net/route, or its head). Never throws. */
export function parseRouteTable(text: string): RouteTable {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  const header = lines[0]?.trim().split(/\s+/) ?? [];
  const at = Object.fromEntries(COLUMNS.map((name) => [name, header.indexOf(name)])) as Record<
    (typeof COLUMNS)[number],
    number
  >;
  const missing = COLUMNS.filter((name) => at[name] < 0);
  if (lines.length === 0) return { ok: false, error: 'empty (no header line)' };
  if (missing.length > 0)
    return { ok: false, error: `header lacks ${missing.join(', ')}: not a /proc/net/route table` };

  const defaults: DefaultRoute[] = [];
  let skipped = 0;
  let firstSkipped: string | null = null;
  for (const [index, line] of lines.slice(1).entries()) {
    const fields = line.trim().split(/\s+/);
    const route = readRoute(fields, at);
    if (typeof route === 'string') {
      skipped++;
      firstSkipped ??= `line ${index + 2}: ${route}`;
      continue;
    }
    const usable = (route.flags & (RTF_UP | RTF_GATEWAY)) === (RTF_UP | RTF_GATEWAY);
    if (route.destination === 0 && route.mask === 0 && usable && !(route.flags & RTF_REJECT))
      defaults.push({ iface: route.iface, gateway: ipv4OfWord(route.gateway), metric: route.metric });
  }
  // A stable sort: among equal metrics the kernel's own order (the one it uses first) stays.
  defaults.sort((a, b) => a.metric - b.metric);
  return { ok: true, defaults, skipped, firstSkipped };
}

interface RawRoute {
  iface: string;
  destination: number;
  gateway: number;
  flags: number;
  metric: number;
  mask: number;
}

/** One line's fields as a route, or why they are not one. */
function readRoute(
  fields: readonly string[],
  at: Record<(typeof COLUMNS)[number], number>,
): RawRoute | string {
  const iface = fields[at.Iface] ?? '';
  // `*` is the interface of a route without one (unreachable, prohibit, blackhole).
  if (!/^\S{1,15}$/.test(iface)) return 'no interface name';
  const words: Partial<Record<'destination' | 'gateway' | 'flags' | 'mask', number>> = {};
  for (const [key, column] of [
    ['destination', at.Destination],
    ['gateway', at.Gateway],
    ['flags', at.Flags],
    ['mask', at.Mask],
  ] as const) {
    const text = fields[column] ?? '';
    if (!/^[0-9A-Fa-f]{1,8}$/.test(text)) return `${key} "${text.slice(0, 16)}" is not a hex word`;
    words[key] = Number.parseInt(text, 16);
  }
  const metricText = fields[at.Metric] ?? '';
  if (!/^\d{1,10}$/.test(metricText)) return `metric "${metricText.slice(0, 16)}" is not a number`;
  return {
    iface,
    destination: words.destination ?? 0,
    gateway: words.gateway ?? 0,
    flags: words.flags ?? 0,
    mask: words.mask ?? 0,
    metric: Number(metricText),
  };
}

/** A little-endian 32-bit word as dotted IPv4 (`0x010200C0` → `192.0.2.1`). */
export function ipv4OfWord(word: number): string {
  return [word & 0xff, (word >>> 8) & 0xff, (word >>> 16) & 0xff, (word >>> 24) & 0xff].join('.');
}
