/**
 * The mount table (`/proc/<pid>/mountinfo`, proc(5)) and which mount holds a path: pure.
 *
 * A line: `36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue`:
 * mount id, parent id, the device (major:minor, what stat() says of any file on it), the root
 * of the mount within its file system, the mount point, the mount's options, optional
 * fields, `-`, the file system type, its source, and the super block's options. Blanks,
 * tabs, newlines and backslashes in paths are written as octal escapes (`\040`).
 *
 * Read-only is either: the mount's own `ro` (a bind or a `mount -o remount,bind,ro`), or the
 * super block's (`mount -o remount,ro`, and the classic: ext4's errors=remount-ro after an
 * I/O error, which sets only the super block read-only, so only the last field says so).
 */
import { ParseError } from '../../../core/errors.js';

/** One mount. */
export interface MountEntry {
  readonly id: number;
  /** `major:minor` */
  readonly device: string;
  /** The mounted directory within its file system (`/` for a whole file system). */
  readonly root: string;
  readonly mountPoint: string;
  readonly options: readonly string[];
  readonly fsType: string;
  readonly source: string;
  readonly superOptions: readonly string[];
}

/** The mount table as read: its entries, and how many lines were not mountinfo lines. */
export interface MountTable {
  readonly entries: readonly MountEntry[];
  readonly garbage: number;
}

const DEVICE = /^\d{1,10}:\d{1,10}$/;

/** `\040` → a blank, as the kernel escapes paths. */
export function unescapeMountPath(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** One mountinfo line; a ParseError naming what is wrong. */
export function parseMountInfoLine(line: string): MountEntry {
  const fields = line.split(' ');
  const dash = fields.indexOf('-', 6);
  if (dash < 0 || fields.length < dash + 4)
    throw new ParseError('not a mountinfo line (no "-" and three fields after it)');
  const [id, , device, root, mountPoint, options] = fields as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  if (!/^\d{1,10}$/.test(id)) throw new ParseError('mount id is not a number');
  if (!DEVICE.test(device)) throw new ParseError('device is not major:minor');
  if (!mountPoint.startsWith('/') || !root.startsWith('/'))
    throw new ParseError('mount point or root is not absolute');
  return {
    id: Number(id),
    device,
    root: unescapeMountPath(root),
    mountPoint: unescapeMountPath(mountPoint),
    options: options.split(','),
    fsType: fields[dash + 1] as string,
    source: unescapeMountPath(fields[dash + 2] as string),
    superOptions: (fields[dash + 3] as string).split(','),
  };
}

/** Every line of a mountinfo text; lines that are not mountinfo lines are counted, not kept. */
export function parseMountInfo(text: string): MountTable {
  const entries: MountEntry[] = [];
  let garbage = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      entries.push(parseMountInfoLine(line));
    } catch {
      garbage++;
    }
  }
  return { entries, garbage };
}

/** Whether the mount, or its file system, is read-only. */
export function isReadOnly(entry: MountEntry): boolean {
  return entry.options.includes('ro') || entry.superOptions.includes('ro');
}

/** Whether `mountPoint` is `path` or one of its parents (`/var/lib` holds `/var/lib/x`, not `/var/library`). */
function holds(mountPoint: string, path: string): boolean {
  return mountPoint === '/' || path === mountPoint || path.startsWith(`${mountPoint}/`);
}

/**
 * The mount holding a path, by the device stat() gave for it and, among the mounts of that
 * device, the deepest mount point above the path (as the host names it, `hostPath`, or as
 * the agent reaches it, `agentPath`, whichever table this is); the later of equals (a mount
 * on top of another). A path reached through a symbolic link lies under none of its device's
 * mount points: then the device's whole-file-system mount (root `/`) answers. No mount of the
 * device at all (btrfs subvolumes report their own): the deepest mount point above `hostPath`.
 */
export function findMount(
  entries: readonly MountEntry[],
  where: { hostPath: string; agentPath: string; device: string },
): MountEntry | undefined {
  const deepest = (candidates: readonly MountEntry[], paths: readonly string[]): MountEntry | undefined => {
    let best: MountEntry | undefined;
    for (const entry of candidates)
      if (
        paths.some((p) => holds(entry.mountPoint, p)) &&
        entry.mountPoint.length >= (best?.mountPoint.length ?? 0)
      )
        best = entry;
    return best;
  };
  const ofDevice = entries.filter((e) => e.device === where.device);
  if (ofDevice.length > 0)
    return (
      deepest(ofDevice, [where.hostPath, where.agentPath]) ??
      ofDevice.findLast((e) => e.root === '/') ??
      ofDevice[ofDevice.length - 1]
    );
  return deepest(entries, [where.hostPath]);
}
