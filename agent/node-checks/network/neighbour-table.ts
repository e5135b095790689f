/**
 * The kernel's IPv4 neighbour (ARP) table as /proc/net/arp prints it, read for one address.
 * Pure: text in, an answer out.
 *
 *     IP address       HW type     Flags       HW address            Mask     Device
 *     192.0.2.1        0x1         0x2         52:54:00:12:34:56     *        eth0
 *
 * Flags 0x2 (ATF_COM) is a complete entry: the kernel holds a link-layer address for it that
 * the neighbour answered for (states REACHABLE, STALE, DELAY, PROBE or PERMANENT); an entry
 * being resolved, or that failed, shows 0x0.
 */

/** ATF_COM: the entry is complete. */
const ATF_COM = 0x2;

/** What the table says of one address. */
export type NeighbourEntry =
  | { readonly ok: true; readonly state: 'complete' | 'incomplete' | 'absent'; readonly skipped: number }
  | { readonly ok: false; readonly error: string };

/**
 * The entry for `address` (on interface `iface` when given) in `text`. Lines that are not
 * entries are counted and skipped. Never throws.
 */
export function neighbourEntry(text: string, address: string, iface?: string): NeighbourEntry {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  const header = lines[0] ?? '';
  if (!/^IP address\s+HW type\s+Flags\s+HW address\s+Mask\s+Device\s*$/.test(header.trim()))
    return {
      ok: false,
      error: 'header is not /proc/net/arp’s (IP address, HW type, Flags, HW address, Mask, Device)',
    };
  let skipped = 0;
  let state: 'complete' | 'incomplete' | 'absent' = 'absent';
  for (const line of lines.slice(1)) {
    const [ip, type, flags, hw, mask, device, ...rest] = line.trim().split(/\s+/);
    if (
      rest.length > 0 ||
      device === undefined ||
      !/^0x[0-9a-fA-F]{1,8}$/.test(type ?? '') ||
      !/^0x[0-9a-fA-F]{1,8}$/.test(flags ?? '') ||
      hw === undefined ||
      mask === undefined
    ) {
      skipped++;
      continue;
    }
    if (ip !== address || (iface !== undefined && device !== iface)) continue;
    const complete = (Number.parseInt(flags!.slice(2), 16) & ATF_COM) !== 0 && !/^(00:)+00$/.test(hw);
    // Several entries (one per interface) when no interface is given: any complete one counts.
    if (complete) state = 'complete';
    else if (state === 'absent') state = 'incomplete';
  }
  return { ok: true, state, skipped };
}
