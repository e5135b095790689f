/**
 * A node problem's message: one printable line of at most SNAPSHOT_LIMITS.problemMessage
 * characters. A check that finds the same problem in several places (three links down, two
 * full file systems) sends one problem per reason whose message lists them, most important
 * first, and says how many it had to leave out.
 */
import { SNAPSHOT_LIMITS } from '../../contracts/fields/index.js';
import { excerpt } from '../../core/errors.js';

/** A name read from the node (an interface, a DIMM label, a mount point), made safe for a message. */
export function nameOf(text: string, max = 64): string {
  return excerpt(text, max);
}

/** `parts` joined by `; ` within `max` characters; those left out are counted (`(+2 more)`). */
export function joinProblemParts(
  parts: readonly string[],
  max: number = SNAPSHOT_LIMITS.problemMessage,
): string {
  let out = '';
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string;
    const left = parts.length - i - 1;
    const tail = left > 0 ? ` (+${left} more)` : '';
    const next = out === '' ? part : `${out}; ${part}`;
    if (next.length + tail.length <= max) {
      out = next;
      continue;
    }
    // The first part alone is too long: it is cut short (excerpt adds one character, `…`).
    if (out === '') return `${excerpt(part, max - tail.length - 1)}${tail}`;
    // What is kept fitted with this count when it was added.
    return `${out} (+${left + 1} more)`;
  }
  return out;
}

/** `1 error`, `3 errors` (`1 loss`, `3 losses` with the plural given). */
export function plural(count: number, word: string, words = `${word}s`): string {
  return `${count} ${count === 1 ? word : words}`;
}

/** Bytes for a person: `512 B`, `3.2 GiB`. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${Math.round(value)} B` : `${value.toFixed(1)} ${units[unit]}`;
}
