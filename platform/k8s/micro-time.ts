/**
 * Lease `acquireTime`/`renewTime` (and events.k8s.io `eventTime`) are MicroTime: the
 * apiserver parses them with exactly six fractional digits and rejects the three that
 * `Date#toISOString()` writes (kubernetes-client/javascript#828). client-node serialises
 * Dates through `toISOString()`, so a Date meant for a MicroTime field must pad it.
 */

/** A Date whose ISO form carries six fractional digits (milliseconds, zero-padded). */
export class MicroTime extends Date {
  override toISOString(): string {
    return super.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
  }
  override toJSON(): string {
    return this.toISOString();
  }
}

/** Wraps a time (Date or epoch ms) for a MicroTime field. */
export function microTime(time: Date | number): MicroTime {
  return new MicroTime(typeof time === 'number' ? time : time.getTime());
}
